#!/usr/bin/python3
"""Writes tests/data/text/lower_sort_cases.json: Python's str.lower() and Jinja2's dictsort
order over many generated keys, for tests/text/unicode_lower_test.cpp.

Every expected value is computed here by the Python that renders the reference
(/usr/bin/python3), never by k3:

  lower        [s, s.lower()] for hand-picked and random strings in many scripts, with
               Final_Sigma contexts (U+03A3 next to cased, case-ignorable and other code
               points);
  lower_all    [cp, chr(cp).lower()] for every code point whose lowercase differs (the test
               also checks that every other code point lowers to itself);
  sigma_probes [s, s.lower()] for "c\u03a3", "Ac\u03a3" and "A\u03a3c", c the first and
               last code point of every run of Final_Sigma class, so each class boundary is
               checked;
  sorts        {keys, sorted}: sorted(keys, key=str.lower), the order Jinja2's dictsort gives
               a mapping's items (stable: keys equal after lowering keep their order);
  renders      {input, rendered}: full renders of tests/data/text/Kimi-K3.jinja by Jinja2 in
               the Hugging Face chat-template environment (as tests/data/text's golden renders
               were made) for tool schemas, dynamic tool declarations and response schemas
               with such keys. Only when this Python has jinja2 (Debian: python3-jinja2);
               otherwise the list is empty and "jinja2" is null.

Regenerate: /usr/bin/python3 scripts/gen_lower_fixture.py   (deterministic: fixed seed)
"""
import json
import os
import random
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "text", "lower_sort_cases.json")
TEMPLATE = os.path.join(ROOT, "tests", "data", "text", "Kimi-K3.jinja")
GOLDEN = os.path.join(ROOT, "tests", "data", "text", "chat_template_cases.json")

SIGMA = "\u03a3"

# Words and letters per script; upper and lower case forms both appear.
LATIN = ["Über", "über", "öffnen", "Öl", "Zebra", "zebra", "apfel", "Äpfel", "ändern", "École",
         "été", "Ézz", "éaa", "Ñandú", "ñu", "Ångström", "ångström", "ÿes", "Ÿes", "ǅemal", "ǆ",
         "Ǆ", "ẞtraße", "ßtraße", "SStraße", "ss", "Straße", "STRASSE", "İstanbul", "istanbul",
         "i\u0307x", "İ", "iz", "ia", "ıspanak", "Isparta", "\u212aelvin", "kelvin", "\u212bngstrom",
         "Ølstykke", "øre", "Œuvre", "œil", "Þorn", "þorn", "Ðan", "ðan", "Ĳssel", "ĳs", "ǈ", "ǉ", "Ǉ",
         "ǲ", "Ȿ", "ɀ", "Ɐ", "ɐ", "Ꞵ", "ꞵ", "ꟶ", "Ꟶ", "Ｆｕｌｌ", "ｆｕｌｌ"]
GREEK = ["ΣΟΦΙΑ", "σοφία", "ΟΔΟΣ", "οδος", "οδός", "Σ", "σ", "ς", "ΑΣ", "ας", "ασ", "ΑΣΑ", "ασα",
         "Σ1", "ΑΣ1", "ΑΣ'", "ΑΣ'Β", "Α'Σ", "ΑΣ\u0301", "ΑΣ\u0301Β", "ΑΣ.", "ΑΣ Β", "ΣΑ", "1Σ",
         "Ω", "ω", "\u2126hm", "Άλφα", "άλφα", "ΐ", "ΰ", "ϴ", "θ", "ϑ", "Ϗ", "ϗ", "ᾈ", "ᾀ", "ᾼ", "ᾳ",
         "ΑΣ\u0345", "\u0345Σ", "ἈΣ", "ᾼΣ"]
CYRILLIC = ["Привет", "привет", "ПРИВЕТ", "Ёлка", "ёлка", "ёж", "Яблоко", "яма", "Ѐ", "ѐ", "Ѣ",
            "ѣ", "Ӏ", "ӏ", "Ꙋ", "ꙋ", "Ґ", "ґ", "Ї", "ї", "Ҷ", "ҷ", "Ԥ", "ԥ", "ᲀ"]
ARMENIAN = ["Բարեւ", "բարև", "Ա", "ա", "Ֆ", "ֆ", "Երևան", "երեւան", "և"]
GEORGIAN = ["ა", "Ა", "ბ", "Ბ", "Ⴀ", "ⴀ", "Ⴭ", "ⴭ", "ქართული", "ᲥᲐᲠᲗᲣᲚᲘ", "Ჽ"]
CJK = ["名前", "住所", "東京", "ｱｲｳ", "アイウ", "한국어", "ㄱ", "汉字", "漢字", "〆"]
ASTRAL = ["𐐀", "𐐨", "𐐅𐐯", "𐐭𐐯", "𐒰", "𐓘", "𐲀", "𐳀", "𑢠", "𑣀", "𖹀", "𖹠", "𞤀", "𞤢",
          "𐕰", "𐖗", "𝐀", "🄰", "🅐"]
OTHER = ["Cherokee", "Ꭰ", "ꭰ", "Ᏸ", "ᏸ", "ꮿ", "Ᏼ", "name", "Name", "NAME", "nAme", "url", "URL",
         "apiKey", "ID", "id", "_x", "x_", "a b", "a-b", "a1", "A1", "", " ", "Ⓐ", "ⓐ", "Ⅻ", "ⅻ",
         "ǅ", "Dž", "dž", "DŽ"]
POOLS = {"latin": LATIN, "greek": GREEK, "cyrillic": CYRILLIC, "armenian": ARMENIAN,
         "georgian": GEORGIAN, "cjk": CJK, "astral": ASTRAL, "other": OTHER}

# Letters to build random keys from, per script (case pairs where the script has them).
ALPHABETS = {
    "latin": "AaÄäÖöÜüÉéÈèÑñÇçÅåŸÿİıIiẞßSsKkǅǄǆŁłŒœØø",
    "greek": "ΑαΒβΣσςΟοΔδΩωΆάΪϊΐ\u0301'",
    "cyrillic": "АаБбЁёЯяЖжЩщІіЇїҐґ",
    "armenian": "ԱաԲբԳգՖֆև",
    "georgian": "აბგᲐᲑᲒႠⴀႡⴁ",
    "cjk": "名前東京ｱイ한",
    "astral": "𐐀𐐨𐐁𐐩𐒰𐓘𞤀𞤢𐲀𐳀𑢠𑣀",
    "mixed": "AaΣσςİiẞß\u0301'.:-_ 1Ω𐐀𐐨Ꭰꭰǅ",
}


def rand_key(rng, alphabet):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))


def sigma_strings(rng):
    around = ["A", "a", "Σ", "σ", "ς", "1", " ", "'", ".", ":", "\u0301", "\u0345", "\u00ad",
              "\u02b0", "\u2019", "名", "ǅ", "𐐀", "\u200d", "ʹ", "ͺ", "_", "-"]
    out = []
    for _ in range(600):
        n = rng.randint(1, 7)
        s = [rng.choice(around + [SIGMA] * 4) for _ in range(n)]
        out.append("".join(s))
    return out


def class_of(ch):
    if (ch + SIGMA).lower()[-1] == "\u03c2":
        return 1
    if ("A" + ch + SIGMA).lower()[-1] == "\u03c2":
        return 2
    return 0


def sigma_probes():
    probes = []
    prev, start = None, 0
    bounds = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            k = -1
        else:
            k = class_of(chr(c))
        if k != prev:
            if prev is not None and prev != -1:
                bounds.append((start, c - 1))
            prev, start = k, c
    bounds.append((start, 0x10FFFF))
    cps = sorted({cp for b in bounds for cp in b})
    for cp in cps:
        ch = chr(cp)
        for s in (ch + SIGMA, "A" + ch + SIGMA, "A" + SIGMA + ch):
            probes.append([s, s.lower()])
    return probes


def key_sets(rng):
    sets = []
    everything = [k for pool in POOLS.values() for k in pool]
    # Each pool on its own, in several shuffles.
    for name, pool in POOLS.items():
        uniq = list(dict.fromkeys(pool))
        for _ in range(6):
            ks = uniq[:]
            rng.shuffle(ks)
            sets.append(ks)
    # Random mixtures of the pools.
    for _ in range(300):
        ks = list(dict.fromkeys(rng.sample(everything, rng.randint(2, 14))))
        sets.append(ks)
    # Random keys per alphabet, with case variants of the same key to test stability.
    for name, alpha in ALPHABETS.items():
        for _ in range(40):
            ks = [rand_key(rng, alpha) for _ in range(rng.randint(2, 10))]
            for k in list(ks):
                if rng.random() < 0.5:
                    ks.append(k.upper())
                if rng.random() < 0.3:
                    ks.append(k.swapcase())
            ks = list(dict.fromkeys(ks))
            rng.shuffle(ks)
            sets.append(ks)
    # Pairs that differ only in case, in both orders.
    for a, b in [("Name", "name"), ("ΑΣ", "ας"), ("ΑΣ", "ασ"), ("İ", "i\u0307"), ("ẞ", "ß"),
                 ("Über", "über"), ("Привет", "привет"), ("Ꭰ", "ꭰ"), ("𐐀", "𐐨"), ("ǅ", "ǆ"),
                 ("\u212a", "k"), ("\u2126", "ω"), ("Σ", "σ"), ("ΟΔΟΣ", "οδος"), ("ΟΔΟΣ", "οδοσ")]:
        sets.append([a, b])
        sets.append([b, a])
    return [{"keys": ks, "sorted": sorted(ks, key=str.lower)} for ks in sets]


# ------------------------------------------------------------------ Jinja2 renders
def hf_env():
    """Jinja2 set up as transformers' apply_chat_template sets it up."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render(tmpl, inp):
    kw = dict(inp["kwargs"])
    agp = kw.pop("add_generation_prompt", False)
    return tmpl.render(messages=inp["messages"], tools=inp["tools"], documents=None,
                       add_generation_prompt=agp, bos_token="[BOS]", eos_token="[EOS]",
                       unk_token="[UNK]", pad_token="[PAD]", **kw)


def schema_for(rng, keys, depth=0):
    props = {}
    for k in keys:
        r = rng.random()
        if depth < 2 and r < 0.2:
            sub = rng.sample(keys, min(len(keys), rng.randint(1, 4)))
            props[k] = {"type": "object", "properties": schema_for(rng, sub, depth + 1),
                        "Description": k.upper(), "description": k}
        elif r < 0.35:
            props[k] = {"type": "array", "items": {"type": "string", "enum": [k, k.lower()]}}
        else:
            props[k] = {"type": rng.choice(["string", "integer", "number", "boolean"]),
                        "description": "about " + k, "Title": k}
    return props


def render_cases(rng, key_pool):
    try:
        import jinja2
    except ImportError:
        return None, []
    env = hf_env()
    with open(TEMPLATE, encoding="utf-8") as f:
        tmpl = env.from_string(f.read())
    # The environment must reproduce the golden renders before its output is trusted.
    with open(GOLDEN, encoding="utf-8") as f:
        for c in json.load(f):
            if "error" not in c and render(tmpl, c["input"]) != c["rendered"]:
                sys.exit("jinja2 environment does not reproduce golden case " + c["name"])
    cases = []
    for i in range(60):
        keys = list(dict.fromkeys(rng.sample(key_pool, rng.randint(2, 10))))
        tools = []
        for t in range(rng.randint(1, 3)):
            name = rng.choice(["get_weather", "Suche", "поиск", "検索", "Ψάξε", "lookup"]) + str(t)
            tools.append({"type": "function", "function": {
                "name": name, "description": "tool " + name,
                "parameters": {"type": "object", "properties": schema_for(rng, keys),
                               "required": keys[:1]}}})
        kind = i % 3
        messages = [{"role": "user", "content": "Hi " + keys[0]}]
        kwargs = {"add_generation_prompt": True}
        top = tools
        if kind == 1:  # a dynamic tool declaration in a system message
            messages = [{"role": "user", "content": "first"},
                        {"role": "assistant", "reasoning_content": "r", "content": "ok"},
                        {"role": "system", "content": "x", "tools": tools},
                        {"role": "user", "content": "second"}]
            top = None
        elif kind == 2:  # a response schema too, and a call whose arguments use the keys
            schema = {"type": "object", "properties": schema_for(rng, keys), "Required": keys[-1:]}
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}
            args = {k: j for j, k in enumerate(keys)}
            messages = [{"role": "user", "content": "go"},
                        {"role": "assistant", "content": "", "tool_calls": [
                            {"id": "c0", "type": "function",
                             "function": {"name": tools[0]["function"]["name"], "arguments": args}}]},
                        {"role": "tool", "tool_call_id": "c0", "content": "done"},
                        {"role": "user", "content": "and now?"}]
        inp = {"messages": messages, "tools": top, "kwargs": kwargs}
        cases.append({"name": "unicode_keys_%02d" % i, "input": inp, "rendered": render(tmpl, inp)})
    return jinja2.__version__, cases


def main():
    rng = random.Random(20240611)
    strings = []
    for pool in POOLS.values():
        strings.extend(pool)
    for alpha in ALPHABETS.values():
        strings.extend(rand_key(rng, alpha) for _ in range(60))
    strings.extend(sigma_strings(rng))
    strings = list(dict.fromkeys(strings))
    lower_all = [[c, chr(c).lower()] for c in range(0x110000)
                 if not 0xD800 <= c <= 0xDFFF and chr(c).lower() != chr(c)]
    sorts = key_sets(rng)
    key_pool = list(dict.fromkeys(k for pool in POOLS.values() for k in pool if k))
    jinja_version, renders = render_cases(rng, key_pool)
    v = sys.version_info
    doc = {
        "about": "Generated by scripts/gen_lower_fixture.py; expected values are Python's "
                 "str.lower(), sorted(keys, key=str.lower) and Jinja2 renders of Kimi-K3.jinja.",
        "python": "%d.%d.%d" % (v.major, v.minor, v.micro),
        "unicode": unicodedata.unidata_version,
        "jinja2": jinja_version,
        "lower": [[s, s.lower()] for s in strings],
        "lower_all": lower_all,
        "sigma_probes": sigma_probes(),
        "sorts": sorts,
        "renders": renders,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote %s: %d strings, %d mappings, %d sigma probes, %d key sets, %d renders (jinja2 %s)"
          % (OUT, len(doc["lower"]), len(lower_all), len(doc["sigma_probes"]), len(sorts),
             len(renders), jinja_version))


if __name__ == "__main__":
    main()
