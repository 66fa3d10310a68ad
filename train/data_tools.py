"""Tool-use episodes: an OpenAI `tools` array, a call with JSON arguments, a result, an answer.

An episode becomes two documents that share their beginning: one whose completion is the
tool call, and one whose completion is the final answer written from the tool result (the
call and the result are then in the rendered history).  About a fifth of the episodes
declare tools but need none, so the model also learns not to call tools needlessly.

Tool results are made up but self-consistent: times carry the right weekday, currency
conversions use one rate table, calculator results are computed with Decimal, and search
results quote the training part of the documentation corpus.
"""

import datetime
import json
from decimal import ROUND_HALF_UP, Decimal

import data_chat as chat
from data_kb import CAPITALS, DEFINITIONS, FIRST_NAMES
from data_render import Sample, Turn


def _fn(name, description, properties, required):
    return {"type": "function",
            "function": {"name": name, "description": description,
                         "parameters": {"type": "object", "properties": properties,
                                        "required": required}}}


TOOLS = {
    "get_weather": _fn(
        "get_weather", "Get the current weather for a city.",
        {"city": {"type": "string", "description": "City name, for example \"Paris\""},
         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                  "description": "Temperature unit (default celsius)"}},
        ["city"]),
    "calculator": _fn(
        "calculator", "Evaluate an arithmetic expression and return the exact result.",
        {"expression": {"type": "string",
                        "description": "Expression using + - * / and parentheses"}},
        ["expression"]),
    "search_web": _fn(
        "search_web", "Search the web and return the most relevant pages.",
        {"query": {"type": "string", "description": "Search query"},
         "max_results": {"type": "integer", "description": "Number of results (1-10)",
                         "minimum": 1, "maximum": 10}},
        ["query"]),
    "get_time": _fn(
        "get_time", "Get the current local date and time in a time zone.",
        {"timezone": {"type": "string",
                      "description": "IANA time zone name, for example \"Europe/Paris\""}},
        ["timezone"]),
    "send_email": _fn(
        "send_email", "Send an email on behalf of the user.",
        {"to": {"type": "string", "description": "Recipient email address"},
         "subject": {"type": "string", "description": "Subject line"},
         "body": {"type": "string", "description": "Plain-text message body"}},
        ["to", "subject", "body"]),
    "convert_currency": _fn(
        "convert_currency", "Convert an amount of money between currencies at today's rate.",
        {"amount": {"type": "number", "description": "Amount to convert"},
         "from": {"type": "string", "description": "ISO 4217 code of the source currency"},
         "to": {"type": "string", "description": "ISO 4217 code of the target currency"}},
        ["amount", "from", "to"]),
    "lookup_word": _fn(
        "lookup_word", "Look up the definition of an English word in a dictionary.",
        {"word": {"type": "string", "description": "The word to look up"}},
        ["word"]),
}
TOOL_NAMES = sorted(TOOLS)


def validate_args(name, args):
    """Raise AssertionError unless args fit the tool's JSON schema (the subset we use)."""
    schema = TOOLS[name]["function"]["parameters"]
    props = schema["properties"]
    for key in schema["required"]:
        assert key in args, f"{name}: missing required {key}"
    for key, value in args.items():
        assert key in props, f"{name}: unknown argument {key}"
        t = props[key]["type"]
        if t == "string":
            assert isinstance(value, str) and value, f"{name}.{key}: not a non-empty string"
        elif t == "integer":
            assert isinstance(value, int) and not isinstance(value, bool), f"{name}.{key}"
            assert props[key].get("minimum", value) <= value <= props[key].get("maximum", value)
        elif t == "number":
            assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{name}.{key}"
        if "enum" in props[key]:
            assert value in props[key]["enum"], f"{name}.{key}: {value!r} not in enum"


# ---------------------------------------------------------------------------------------
# Per-tool scenario writers: each returns a Scenario
# ---------------------------------------------------------------------------------------

class Scenario:
    """user text; think before the call; calls [(name, args)]; results [dict];
    think after the results; the answer."""

    def __init__(self, tool, user, think_call, calls, results, think_answer, answer,
                 preface=""):
        self.tool, self.user = tool, user
        self.think_call, self.calls, self.results = think_call, calls, results
        self.think_answer, self.answer, self.preface = think_answer, answer, preface


WEATHER_CITIES = sorted({k for _, k, _ in CAPITALS if "," not in k} |
                        {"New York", "Sydney", "Toronto", "Mumbai", "Barcelona", "Chicago",
                         "Istanbul", "Cape Town", "Osaka", "Munich", "Seattle", "Vancouver"})
CONDITIONS = ["sunny", "partly cloudy", "cloudy", "overcast", "light rain", "rain",
              "thunderstorms", "snow", "foggy", "windy", "clear"]


def _weather_result(rng, city, unit):
    c = rng.randint(-12, 38)
    cond = rng.choice([x for x in CONDITIONS if not (x == "snow" and c > 3)])
    temp = c if unit == "celsius" else round(c * 9 / 5 + 32)
    return {"city": city, "temperature": temp, "unit": unit, "condition": cond,
            "humidity": rng.randint(20, 98), "wind_kph": rng.randint(0, 45)}


def _deg(res):
    return f"{res['temperature']}°{'C' if res['unit'] == 'celsius' else 'F'}"


def sc_weather(rng, corpus):
    unit_said = rng.random() < 0.35
    unit = rng.choice(["celsius", "fahrenheit"]) if unit_said else "celsius"
    if rng.random() < 0.2:
        a, b = rng.sample(WEATHER_CITIES, 2)
        user = rng.choice([f"Compare the weather in {a} and {b}.",
                           f"Is it warmer in {a} or in {b} right now?"])
        if unit_said:
            user += f" Use {unit}."
        args = [{"city": a}, {"city": b}]
        if unit_said:
            for x in args:
                x["unit"] = unit
        res = [_weather_result(rng, a, unit), _weather_result(rng, b, unit)]
        ta, tb = res[0]["temperature"], res[1]["temperature"]
        if ta == tb:
            verdict = "Both cities have the same temperature."
        else:
            warm = a if ta > tb else b
            verdict = f"{warm} is warmer by {abs(ta - tb)} degrees."
        answer = (f"Right now {a} is {_deg(res[0])} and {res[0]['condition']}, while {b} is "
                  f"{_deg(res[1])} and {res[1]['condition']}. {verdict}")
        return Scenario("get_weather", user,
                        f"The user wants the current weather in both {a} and {b}. I'll call "
                        f"get_weather once for each city.",
                        [("get_weather", x) for x in args], res,
                        f"{a}: {_deg(res[0])}, {res[0]['condition']}. {b}: {_deg(res[1])}, "
                        f"{res[1]['condition']}. {verdict}", answer,
                        preface=rng.choice(["", "", f"Let me check both cities."]))
    city = rng.choice(WEATHER_CITIES)
    user = rng.choice([f"What's the weather like in {city}?", f"How is the weather in {city} today?",
                       f"Is it raining in {city} right now?", f"weather {city}",
                       f"Do I need a coat in {city} today?", f"What's the temperature in {city}?"])
    if unit_said:
        user = user.rstrip("?.") + f", in {unit}?"
    args = {"city": city}
    if unit_said or rng.random() < 0.3:
        args["unit"] = unit
    res = _weather_result(rng, city, unit)
    base = f"It's currently {_deg(res)} and {res['condition']} in {city}"
    extra = f", with {res['humidity']}% humidity and wind at {res['wind_kph']} km/h."
    if "raining" in user:
        wet = "rain" in res["condition"] or "thunder" in res["condition"]
        answer = (("Yes, it's raining. " if wet else "No, it isn't raining. ") + base + extra)
    elif "coat" in user:
        c = res["temperature"] if unit == "celsius" else (res["temperature"] - 32) * 5 / 9
        advice = ("Yes, a warm coat is a good idea." if c < 10 else
                  "A light jacket should be enough." if c < 18 else "No, you probably won't need one.")
        answer = f"{base}{extra} {advice}"
    else:
        answer = base + extra
    return Scenario("get_weather", user,
                    f"The user is asking about the current weather in {city}. The get_weather "
                    f"tool can tell me that, so I'll call it with city \"{city}\""
                    + (f" and unit \"{unit}\"." if "unit" in args else "."),
                    [("get_weather", args)], [res],
                    f"The tool says {_deg(res)}, {res['condition']}, humidity {res['humidity']}%, "
                    f"wind {res['wind_kph']} km/h in {city}.", answer,
                    preface=rng.choice(["", "", "", f"Let me check the weather in {city}."]))


def _dec_str(d):
    """Decimal -> shortest plain string (no exponent, no trailing zeros)."""
    return format(d.normalize(), "f")


def sc_calculator(rng, corpus):
    def num():
        if rng.random() < 0.25:
            return Decimal(rng.randint(1, 9999)) / 100
        return Decimal(rng.randint(100, 99999))
    shape = rng.choice(["mul", "mul", "add3", "paren", "div"])
    if shape == "mul":
        a, b = num(), num()
        expr, val = f"{_dec_str(a)} * {_dec_str(b)}", a * b
    elif shape == "add3":
        a, b, c = num(), num(), num()
        expr, val = f"{_dec_str(a)} + {_dec_str(b)} - {_dec_str(c)}", a + b - c
    elif shape == "paren":
        a, b, c = num(), num(), Decimal(rng.randint(2, 99))
        expr, val = f"({_dec_str(a)} + {_dec_str(b)}) * {_dec_str(c)}", (a + b) * c
    else:
        b = Decimal(rng.randint(2, 999))
        q = Decimal(rng.randint(2, 9999))
        if rng.random() < 0.5:
            a = b * q
            expr, val = f"{_dec_str(a)} / {_dec_str(b)}", q
        else:
            a = Decimal(rng.randint(1000, 99999))
            val = (a / b).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
            expr = f"{_dec_str(a)} / {_dec_str(b)}"
    vs = _dec_str(val)
    approx = shape == "div" and (Decimal(expr.split(" / ")[0]) / Decimal(expr.split(" / ")[1])) != val
    shown = expr.replace("*", "×") if rng.random() < 0.3 else expr
    user = rng.choice([f"What is {shown}?", f"Can you calculate {shown} for me?",
                       f"Use the calculator: {shown}", f"I need the exact value of {shown}.",
                       f"Work out {shown}, please."])
    result_num = int(val) if val == val.to_integral_value() else float(vs)
    res = {"expression": expr, "result": result_num}
    answer = (f"{shown} ≈ {vs} (rounded to four decimal places)." if approx else f"{shown} = {vs}.")
    return Scenario("calculator", user,
                    "This is a multi-digit calculation, and the calculator gives an exact result, "
                    f"so I'll pass it the expression \"{expr}\".",
                    [("calculator", {"expression": expr})], [res],
                    f"The calculator returned {vs}." + (" That is rounded to four decimals." if approx else ""),
                    answer)


def _doc_hits(corpus):
    if getattr(corpus, "_hits", None) is None:
        hits = []
        for rel, title, items in corpus.train_pages:
            paras = [t for k, t in items if k == "p"]
            if not title or not paras:
                continue
            first = chat.split_sentences(paras[0])[0]
            if not 30 <= len(first) <= 300:
                continue
            if "—" in title:
                topic = title.split("—", 1)[1].strip()
                mod = title.split("—", 1)[0].strip()
            else:
                topic, mod = title, None
            hits.append({"title": title, "rel": rel, "snippet": first, "topic": topic, "mod": mod})
        corpus._hits = hits
    return corpus._hits


def sc_search(rng, corpus):
    hits = _doc_hits(corpus)
    hit = rng.choice(hits)
    topic = hit["topic"].rstrip(".")
    if hit["mod"] and rng.random() < 0.5:
        query = f"python {hit['mod']} module"
        user = rng.choice([f"Search the web for what the Python {hit['mod']} module does.",
                           f"Can you look up the {hit['mod']} module in Python?",
                           f"Find information about Python's {hit['mod']} module online."])
    else:
        query = f"python {topic.lower()}"
        user = rng.choice([f"Search the web for {topic.lower()} in Python.",
                           f"Look up \"{topic}\" in the Python docs for me.",
                           f"Can you find something about {topic.lower()} (Python)?"])
    args = {"query": query}
    n = 3
    if rng.random() < 0.4:
        n = rng.randint(1, 5)
        args["max_results"] = n
        user += f" Just the top {n} result{'s' if n > 1 else ''}." if n > 1 else " Just the top result."
    others = rng.sample([h for h in hits if h["rel"] != hit["rel"]], n - 1)
    results = [{"title": h["title"], "url": "https://docs.python.org/3.11/" + h["rel"],
                "snippet": h["snippet"]} for h in [hit] + others]
    res = {"query": query, "results": results}
    answer = (f"The top result is the Python documentation page \"{hit['title']}\" "
              f"(https://docs.python.org/3.11/{hit['rel']}). It says: {hit['snippet']}")
    return Scenario("search_web", user,
                    f"The user wants information from the web about {topic.lower()}. "
                    f"I'll search for \"{query}\"" + (f" and ask for {n} result{'s' if n > 1 else ''}."
                                                       if "max_results" in args else "."),
                    [("search_web", args)], [res],
                    f"The search returned {len(results)} result{'s' if len(results) > 1 else ''}. "
                    f"The first one, \"{hit['title']}\", matches the question best.",
                    answer, preface=rng.choice(["", "", "Let me search for that."]))


TIME_ZONES = [("Tokyo", "Asia/Tokyo"), ("Paris", "Europe/Paris"), ("London", "Europe/London"),
              ("New York", "America/New_York"), ("Los Angeles", "America/Los_Angeles"),
              ("Sydney", "Australia/Sydney"), ("Berlin", "Europe/Berlin"),
              ("Mumbai", "Asia/Kolkata"), ("Beijing", "Asia/Shanghai"), ("Dubai", "Asia/Dubai"),
              ("São Paulo", "America/Sao_Paulo"), ("Cairo", "Africa/Cairo"),
              ("Moscow", "Europe/Moscow"), ("Chicago", "America/Chicago"),
              ("Toronto", "America/Toronto"), ("Singapore", "Asia/Singapore"),
              ("Seoul", "Asia/Seoul"), ("Mexico City", "America/Mexico_City"),
              ("Nairobi", "Africa/Nairobi"), ("Auckland", "Pacific/Auckland")]


def sc_time(rng, corpus):
    city, tz = rng.choice(TIME_ZONES)
    base = datetime.datetime(2023, 1, 1) + datetime.timedelta(minutes=rng.randrange(4 * 365 * 1440))
    user = rng.choice([f"What time is it in {city}?", f"What's the current time in {city}?",
                       f"What day is it in {city} right now?", f"time in {city}?"])
    res = {"timezone": tz, "datetime": base.strftime("%Y-%m-%dT%H:%M:%S"),
           "weekday": base.strftime("%A")}
    date_txt = f"{base.strftime('%A')}, {base.day} {base.strftime('%B %Y')}"
    if "day" in user:
        answer = f"In {city} it is {date_txt}, and the time is {base.strftime('%H:%M')}."
    else:
        answer = f"It's {base.strftime('%H:%M')} in {city} right now ({date_txt})."
    return Scenario("get_time", user,
                    f"The user wants the local time in {city}. Its IANA time zone is {tz}, "
                    f"so I'll call get_time with that.",
                    [("get_time", {"timezone": tz})], [res],
                    f"The tool returned {res['datetime']} for {tz}, a {res['weekday']}.",
                    answer)


EMAILS = [
    ("the meeting is moved to 3 pm", "Meeting moved to 3 pm",
     "Just a quick note: our meeting has been moved to 3 pm today."),
    ("I'll be about ten minutes late", "Running ten minutes late",
     "I'm running about ten minutes late. Sorry for the wait, see you soon."),
    ("thanks for the help yesterday", "Thank you",
     "Thank you for your help yesterday. I really appreciated it."),
    ("the report is ready for review", "Report ready for review",
     "The report is finished and ready for your review. Let me know if you have any questions."),
    ("dinner is at 7 on Friday", "Dinner on Friday",
     "Dinner is at 7 pm on Friday. Looking forward to seeing you!"),
    ("the package arrived safely", "Package arrived",
     "Good news: the package arrived safely this morning. Thanks for sending it."),
    ("we need to reschedule tomorrow's call", "Rescheduling tomorrow's call",
     "Something came up, so we need to reschedule tomorrow's call. Which times work for you?"),
    ("happy birthday", "Happy birthday!",
     "Happy birthday! I hope you have a wonderful day."),
]


def sc_email(rng, corpus):
    name = rng.choice(FIRST_NAMES)
    addr = f"{name.lower()}@{rng.choice(['example.com', 'example.org', 'mail.example.net'])}"
    phrase, subject, body_line = rng.choice(EMAILS)
    sign = rng.choice(["Best regards", "Thanks", "Cheers", "Kind regards"])
    body = f"Hi {name},\n\n{body_line}\n\n{sign}"
    user = rng.choice([f"Send an email to {addr} telling {name} that {phrase}.",
                       f"Please email {name} at {addr}: {phrase}.",
                       f"Can you let {name} ({addr}) know by email that {phrase}?"])
    msg_id = "msg_" + "".join(rng.choice("0123456789abcdef") for _ in range(10))
    res = {"status": "sent", "to": addr, "message_id": msg_id}
    return Scenario("send_email", user,
                    f"The user wants me to email {addr} to say that {phrase}. I'll write a short "
                    f"message with the subject \"{subject}\" and send it with send_email.",
                    [("send_email", {"to": addr, "subject": subject, "body": body})], [res],
                    f"The email was sent (message id {msg_id}).",
                    f"Done! I sent the email to {addr} with the subject \"{subject}\".",
                    preface=rng.choice(["", "", "Sure, I'll send that now."]))


# Units of currency per US dollar; one fixed table keeps every conversion consistent.
RATES = {"USD": Decimal("1"), "EUR": Decimal("0.92"), "GBP": Decimal("0.79"),
         "JPY": Decimal("151.2"), "CHF": Decimal("0.90"), "CAD": Decimal("1.36"),
         "AUD": Decimal("1.52"), "INR": Decimal("83.3"), "CNY": Decimal("7.23"),
         "MXN": Decimal("17.1"), "SEK": Decimal("10.6"), "BRL": Decimal("5.05")}
CURRENCY_NAMES = {"USD": "US dollars", "EUR": "euros", "GBP": "British pounds",
                  "JPY": "Japanese yen", "CHF": "Swiss francs", "CAD": "Canadian dollars",
                  "AUD": "Australian dollars", "INR": "Indian rupees", "CNY": "Chinese yuan",
                  "MXN": "Mexican pesos", "SEK": "Swedish kronor", "BRL": "Brazilian reais"}


def sc_currency(rng, corpus):
    src, dst = rng.sample(sorted(RATES), 2)
    if rng.random() < 0.3:
        amount = Decimal(rng.randint(100, 99999)) / 100
    else:
        amount = Decimal(rng.choice([5, 10, 20, 25, 50, 75, 100, 150, 200, 250, 500, 1000,
                                     rng.randint(1, 5000)]))
    rate = (RATES[dst] / RATES[src]).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    converted = (amount * rate).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    amt_s = _dec_str(amount)
    amount_json = int(amount) if amount == amount.to_integral_value() else float(amt_s)
    use_names = rng.random() < 0.6
    s_name = CURRENCY_NAMES[src] if use_names else src
    d_name = CURRENCY_NAMES[dst] if use_names else dst
    user = rng.choice([f"How much is {amt_s} {s_name} in {d_name}?",
                       f"Convert {amt_s} {s_name} to {d_name}.",
                       f"What are {amt_s} {s_name} worth in {d_name} today?"])
    res = {"amount": amount_json, "from": src, "to": dst, "rate": float(_dec_str(rate)),
           "converted": float(_dec_str(converted))}
    conv_s = format(converted, ",.2f")
    return Scenario("convert_currency", user,
                    f"The user wants to convert {amt_s} {src} to {dst}. I'll use convert_currency "
                    f"with amount {amt_s}, from \"{src}\" and to \"{dst}\".",
                    [("convert_currency", {"amount": amount_json, "from": src, "to": dst})], [res],
                    f"At a rate of {_dec_str(rate)}, {amt_s} {src} comes to {_dec_str(converted)} {dst}.",
                    f"{amt_s} {src} is about {conv_s} {dst} at today's rate of {_dec_str(rate)}.")


def sc_lookup(rng, corpus):
    word = rng.choice(sorted(DEFINITIONS))
    pos, definition = DEFINITIONS[word]
    user = rng.choice([f"Look up the word \"{word}\" in the dictionary.",
                       f"Can you check the dictionary definition of {word}?",
                       f"What's the dictionary meaning of \"{word}\"?"])
    res = {"word": word, "part_of_speech": pos, "definition": chat.cap(definition) + "."}
    return Scenario("lookup_word", user,
                    f"The user asks for the dictionary definition of \"{word}\", so I'll look it "
                    f"up with lookup_word.",
                    [("lookup_word", {"word": word})], [res],
                    f"The dictionary lists \"{word}\" as {chat.article(pos)} {pos}: {definition}.",
                    f"\"{chat.cap(word)}\" is {chat.article(pos)} {pos} meaning {definition}.")


SCENARIOS = {"get_weather": sc_weather, "calculator": sc_calculator, "search_web": sc_search,
             "get_time": sc_time, "send_email": sc_email, "convert_currency": sc_currency,
             "lookup_word": sc_lookup}


# ---------------------------------------------------------------------------------------
# Episodes
# ---------------------------------------------------------------------------------------

def _declare(rng, needed):
    """1-3 tools including every needed one, in a random order."""
    names = list(dict.fromkeys(needed))
    extra = [n for n in TOOL_NAMES if n not in names]
    k = rng.randint(max(1, len(names)), 3)
    names += rng.sample(extra, max(0, k - len(names)))
    rng.shuffle(names)
    return [TOOLS[n] for n in names]


def tool_samples(rng, corpus):
    """One episode -> 1 or 2 Samples (tool call, final answer)."""
    system, style = chat.pick_system(rng, p_none=0.6)
    if style.get("brief"):
        system, style = None, {"brief": False, "name": None}  # brief answers fit tools badly
    thinking, effort = chat.pick_settings(rng)
    base = [{"role": "system", "content": system}] if system else []

    if rng.random() < 0.2:
        # Tools are declared but the question needs none of them.
        tools = _declare(rng, [rng.choice(TOOL_NAMES)])
        qa = chat.random_qa(rng, corpus, exclude=(chat.qa_summarize,)) if rng.random() < 0.8 \
            else chat.qa_smalltalk(rng, corpus, style)
        names = ", ".join(t["function"]["name"] for t in tools)
        think = chat.trim_think(qa.think, effort) + \
            f" None of the tools ({names}) is needed for this; I can answer directly."
        msgs = base + [{"role": "user", "content": qa.q}]
        return [Sample("tool", msgs, thinking, Turn(think if thinking else "", qa.long),
                       tools=tools, effort=effort, meta={"calls": 0})]

    tool = rng.choice(TOOL_NAMES)
    sc = SCENARIOS[tool](rng, corpus)
    tools = _declare(rng, [tool])
    msgs = base + [{"role": "user", "content": sc.user}]
    call_ids = [f"call_{rng.randrange(16 ** 6):06x}" for _ in sc.calls]
    call_turn = Turn(sc.think_call if thinking else "", sc.preface, list(sc.calls))
    call_sample = Sample("tool", list(msgs), thinking, call_turn, tools=tools, effort=effort,
                         meta={"calls": len(sc.calls), "final_call_ids": call_ids})
    hist = msgs + [Turn(sc.think_call, sc.preface, list(sc.calls)).message(call_ids)]
    for cid, res in zip(call_ids, sc.results):
        hist.append({"role": "tool", "tool_call_id": cid,
                     "content": json.dumps(res, ensure_ascii=False)})
    answer_sample = Sample("tool", hist, thinking,
                           Turn(sc.think_answer if thinking else "", sc.answer),
                           tools=tools, effort=effort, meta={"calls": 0, "answer_of": tool})
    return [call_sample, answer_sample]
