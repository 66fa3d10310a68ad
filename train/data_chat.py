"""Chat episodes: factual Q&A from the built-in knowledge base, small talk, multi-turn.

Each episode becomes one Sample whose last assistant turn is the completion.  Answers come
from data_kb or are computed (counting, sorting, spelling, calendar arithmetic), so they are
right by construction.  The think trace states what is asked and how the answer follows;
its length follows the reasoning effort (low: the gist, max: every step).  System prompts
change the answers the way a reader expects: "Answer briefly." gives the short form, a
persona prompt changes the assistant's name.
"""

import re

import data_arith as arith
from data_kb import (ANIMAL_BABIES, ANIMAL_SOUNDS, ANIMALS, CAPITALS, COLOUR_WORDS, COLOURS,
                     DAYS, DEFINITIONS, FIRST_NAMES, FRUITS, MONTH_DAYS, MONTHS, OPPOSITES,
                     ORDINALS, PLANETS, SPELL_WORDS, UNIT_CONVERSIONS, UNITS)
from data_render import Sample, Turn

# --------------------------------------------------------------------------------------
# Settings shared by all chat kinds
# --------------------------------------------------------------------------------------

PERSONA_NAMES = ["Ada", "Max", "Juniper", "Orion", "Pip", "Nova", "Sage", "Milo"]


def pick_system(rng, p_none=0.45):
    """(system text or None, style dict).  style: brief (bool), name (str or None)."""
    if rng.random() < p_none:
        return None, {"brief": False, "name": None}
    r = rng.random()
    if r < 0.35:
        return rng.choice(["You are a helpful assistant.", "You are a helpful, friendly assistant.",
                           "You are a helpful assistant. Be accurate and clear."]), \
            {"brief": False, "name": None}
    if r < 0.65:
        return rng.choice(["Answer briefly.", "You are a helpful assistant. Answer briefly.",
                           "Keep your answers short.", "Be concise."]), \
            {"brief": True, "name": None}
    if r < 0.85:
        name = rng.choice(PERSONA_NAMES)
        return rng.choice([f"You are {name}, a friendly assistant.",
                           f"Your name is {name}. You are a cheerful and helpful assistant.",
                           f"You are {name}, an assistant who explains things simply."]), \
            {"brief": False, "name": name}
    return rng.choice(["You are a patient tutor who explains things simply.",
                       "You are a knowledgeable assistant. Explain your answers clearly."]), \
        {"brief": False, "name": None, "tutor": True}


def pick_settings(rng, p_think=0.7):
    """(thinking, effort): effort None means the template default, max."""
    thinking = rng.random() < p_think
    effort = rng.choice([None, None, "low", "high", "max"]) if thinking else None
    return thinking, effort


def trim_think(parts, effort):
    """Keep the whole trace at max effort, its gist at low effort."""
    if effort == "low":
        parts = parts[:max(1, (len(parts) + 1) // 2)]
    elif effort == "high" and len(parts) > 3:
        parts = parts[:-1]
    return " ".join(parts)


def cap(s):
    return s[:1].upper() + s[1:]


def article(word):
    return "an" if word[:1].lower() in "aeiou" else "a"


def join_list(items):
    items = list(items)
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


class QA:
    """One question and its answer.  `ctx` feeds follow-up questions in multi-turn chats."""

    def __init__(self, q, think, long, short=None, ctx=None):
        # An answer ending in an abbreviation ("Washington, D.C.") must not get a second stop.
        fix = lambda t: t[:-1] if t.endswith("..") and not t.endswith("...") else t  # noqa: E731
        self.q, self.think, self.long = q, [fix(t) for t in think], fix(long)
        self.short = fix(short or long)
        self.ctx = ctx or {}
        self.kind = None  # follow-up label; see _followups


def _quote(rng, word):
    return rng.choice(['"{}"', "“{}”", "'{}'", "{}"]).format(word)


# --------------------------------------------------------------------------------------
# Single questions
# --------------------------------------------------------------------------------------

def qa_capital(rng, corpus):
    country, capital, cont = rng.choice(CAPITALS)
    r = rng.random()
    if r < 0.7:
        q = rng.choice(["What is the capital of {c}?", "What's the capital city of {c}?",
                        "Which city is the capital of {c}?", "capital of {c}?",
                        "Do you know the capital of {c}?", "Tell me the capital of {c}."]
                       ).format(c=country)
        think = [f"The question asks for the capital of {country}.",
                 f"The capital of {country} is {capital}."]
        if cont:
            think.append(f"{cap(country)} is in {cont}, and {capital} is its capital city.")
        return QA(q, think, f"The capital of {country} is {capital}.", f"{capital}.",
                  {"topic": "capital", "country": country, "capital": capital, "cont": cont,
                   "it": capital})
    if r < 0.85:
        q = rng.choice(["{k} is the capital of which country?",
                        "Which country has {k} as its capital?"]).format(k=capital)
        think = [f"I need the country whose capital is {capital}.",
                 f"{capital} is the capital of {country}."]
        return QA(q, think, f"{capital} is the capital of {country}.", f"{cap(country)}.",
                  {"topic": "capital", "country": country, "capital": capital, "cont": cont,
                   "it": country})
    choices = [c for c in CAPITALS if c[2]]
    country, capital, cont = rng.choice(choices)
    q = rng.choice(["Which continent is {c} in?", "On which continent is {c}?"]).format(c=country)
    think = [f"The question is which continent {country} belongs to.",
             f"{cap(country)} is in {cont}."]
    return QA(q, think, f"{cap(country)} is in {cont}.", f"{cont}.",
              {"topic": "capital", "country": country, "capital": capital, "cont": cont,
               "it": country})


def qa_colour(rng, corpus):
    thing, colour = rng.choice(COLOURS)
    spelling = rng.choice(["colour", "color"])
    q = rng.choice([f"What {spelling} is {thing}?", f"What is the {spelling} of {thing}?",
                    f"Which {spelling} is {thing} usually?"])
    think = [f"The question asks about the usual {spelling} of {thing}.",
             f"{cap(thing)} is {colour}."]
    return QA(q, think, f"{cap(thing)} is {colour}.", f"{cap(colour)}.",
              {"topic": "colour", "it": colour, "word": colour})


_UNIQUE_SOUNDS = {}
for _a, _v, _s in ANIMAL_SOUNDS:
    _UNIQUE_SOUNDS.setdefault(_s, []).append(_a)


def qa_animal(rng, corpus):
    r = rng.random()
    if r < 0.55:
        animal, verb, sound = rng.choice(ANIMAL_SOUNDS)
        q = rng.choice([f"What sound does {article(animal)} {animal} make?",
                        f"What noise does {article(animal)} {animal} make?",
                        f"How does {article(animal)} {animal} sound?"])
        think = [f"The question is about the sound {article(animal)} {animal} makes.",
                 f"{cap(article(animal))} {animal} {verb}, which is usually written as \"{sound}\"."]
        return QA(q, think, f"{cap(article(animal))} {animal} {verb}. It goes \"{sound}\".",
                  f"It {verb}: \"{sound}\".", {"topic": "animal", "it": animal, "word": animal})
    if r < 0.75:
        sounds = sorted(s for s, a in _UNIQUE_SOUNDS.items() if len(a) == 1)
        sound = rng.choice(sounds)
        animal = _UNIQUE_SOUNDS[sound][0]
        q = rng.choice([f"Which animal says \"{sound}\"?", f"What animal goes \"{sound}\"?"])
        think = [f"\"{cap(sound)}\" is the sound of {article(animal)} {animal}."]
        return QA(q, think, f"{cap(article(animal))} {animal} says \"{sound}\".",
                  f"{cap(article(animal))} {animal}.", {"topic": "animal", "it": animal,
                                                         "word": animal})
    animal, baby = rng.choice(ANIMAL_BABIES)
    q = rng.choice([f"What is a baby {animal} called?", f"What do you call a young {animal}?"])
    think = [f"The question asks for the name of a young {animal}.",
             f"A baby {animal} is called {article(baby)} {baby}."]
    return QA(q, think, f"A baby {animal} is called {article(baby)} {baby}.", f"{cap(article(baby))} {baby}.",
              {"topic": "animal", "it": baby, "word": baby})


def qa_planet(rng, corpus):
    r = rng.random()
    names = [p[0] for p in PLANETS]
    if r < 0.3:
        i = rng.randrange(8)
        name, kind, fact = PLANETS[i]
        q = rng.choice([f"Which planet is {ORDINALS[i]} from the Sun?",
                        f"What is the {ORDINALS[i]} planet from the Sun?"])
        order = ", ".join(f"{k + 1}. {n}" for k, n in enumerate(names[:i + 1]))
        think = [f"Counting the planets outward from the Sun: {order}.",
                 f"So the {ORDINALS[i]} planet is {name}."]
        return QA(q, think, f"{name} is the {ORDINALS[i]} planet from the Sun.", f"{name}.",
                  {"topic": "planet", "index": i, "it": name, "word": name})
    if r < 0.55:
        i = rng.randrange(8)
        name, kind, fact = PLANETS[i]
        q = rng.choice([f"Tell me something about {name}.", f"What do you know about {name}?",
                        f"Give me a fact about the planet {name}."])
        think = [f"{name} is the {ORDINALS[i]} planet from the Sun.",
                 f"It is {article(kind)} {kind} planet." if kind == "rocky" else f"It is {article(kind)} {kind}.",
                 fact]
        long = (f"{name} is the {ORDINALS[i]} planet from the Sun and "
                f"{'a rocky planet' if kind == 'rocky' else article(kind) + ' ' + kind}. {fact}")
        return QA(q, think, long, fact, {"topic": "planet", "index": i, "it": name, "word": name})
    if r < 0.7:
        i = rng.randrange(7)
        name = names[i]
        q = rng.choice([f"Which planet comes after {name}?",
                        f"What is the next planet out from the Sun after {name}?"])
        think = [f"In order from the Sun: {', '.join(names)}.",
                 f"After {name} comes {names[i + 1]}."]
        return QA(q, think, f"{names[i + 1]} comes after {name}.", f"{names[i + 1]}.",
                  {"topic": "planet", "index": i + 1, "it": names[i + 1], "word": names[i + 1]})
    if r < 0.8:
        q = rng.choice(["How many planets are in the Solar System?",
                        "How many planets orbit the Sun?"])
        think = [f"The planets are {join_list(names)}.", "That is eight planets."]
        return QA(q, think, f"There are eight planets: {join_list(names)}.", "Eight.",
                  {"topic": "planet", "it": "eight", "word": "eight"})
    if r < 0.9:
        q = rng.choice(["List the planets in order from the Sun.",
                        "Can you name the planets in order?"])
        think = ["Starting closest to the Sun and moving outward.",
                 f"The order is {', '.join(names)}."]
        return QA(q, think, f"In order from the Sun: {', '.join(names)}.", ", ".join(names) + ".",
                  {"topic": "planet", "it": "Neptune", "word": "Neptune", "index": 7})
    options = [("the largest planet", 4), ("the smallest planet", 0),
               ("known as the Red Planet", 3), ("the closest planet to the Sun", 0),
               ("famous for its rings", 5), ("the hottest planet", 1)]
    what, i = rng.choice(options)
    q = f"Which planet is {what}?"
    think = [f"The question asks which planet is {what}.", PLANETS[i][2].replace("It", PLANETS[i][0], 1)]
    return QA(q, think, PLANETS[i][2].replace("It", PLANETS[i][0], 1), f"{PLANETS[i][0]}.",
              {"topic": "planet", "index": i, "it": PLANETS[i][0], "word": PLANETS[i][0]})


def qa_units(rng, corpus):
    if rng.random() < 0.45:
        phrase, big, small, n = rng.choice([u for u in UNITS if u[2] != "things"])
        q = rng.choice([f"How many {phrase}?", f"Do you know how many {phrase}?",
                        f"Tell me how many {phrase}."])
        think = [f"The question asks how many {small} make one {big}.",
                 f"One {big} is {n} {small}."]
        return QA(q, think, f"There are {n} {phrase}.", f"{n}.", {"topic": "number", "n": n})
    sing, plur, small, f = rng.choice(UNIT_CONVERSIONS)
    k = rng.randint(2, 12)
    q = rng.choice([f"How many {small} are in {k} {plur}?",
                    f"Convert {k} {plur} to {small}."])
    total = k * f
    think = [f"One {sing} has {f} {small}.",
             f"So {k} {plur} have {k} × {f} = {total} {small}."]
    return QA(q, think, f"{k} {plur} is {total} {small}.", f"{total} {small}.",
              {"topic": "number", "n": total})


def qa_opposite(rng, corpus):
    word = rng.choice(sorted(OPPOSITES))
    opp = OPPOSITES[word]
    q = rng.choice([f"What is the opposite of {_quote(rng, word)}?",
                    f"What's the opposite of {word}?",
                    f"Give me the opposite of the word {_quote(rng, word)}."])
    think = [f"I need a word that means the reverse of \"{word}\".",
             f"The opposite of \"{word}\" is \"{opp}\"."]
    return QA(q, think, f"The opposite of \"{word}\" is \"{opp}\".", f"{cap(opp)}.",
              {"topic": "word", "word": opp, "it": opp})


def qa_calendar(rng, corpus):
    r = rng.random()
    if r < 0.2:
        i = rng.randrange(7)
        after = rng.random() < 0.6
        j = (i + (1 if after else -1)) % 7
        q = (f"What day comes after {DAYS[i]}?" if after else f"What day comes before {DAYS[i]}?")
        think = [f"The days of the week in order are {', '.join(DAYS)}.",
                 f"The day {'after' if after else 'before'} {DAYS[i]} is {DAYS[j]}."]
        return QA(q, think, f"{DAYS[j]} comes {'after' if after else 'before'} {DAYS[i]}.",
                  f"{DAYS[j]}.", {"topic": "day", "day": j, "it": DAYS[j], "word": DAYS[j]})
    if r < 0.5:
        i = rng.randrange(7)
        n = rng.randint(2, 40)
        fwd = rng.random() < 0.7
        j = (i + n) % 7 if fwd else (i - n) % 7
        q = (f"If today is {DAYS[i]}, what day will it be in {n} days?" if fwd else
             f"If today is {DAYS[i]}, what day was it {n} days ago?")
        w, d = divmod(n, 7)
        think = [f"{n} days is {w} week{'s' if w != 1 else ''} and {d} day{'s' if d != 1 else ''}."
                 if w else f"I count {n} days {'forward' if fwd else 'back'} from {DAYS[i]}.",
                 "Whole weeks land on the same weekday." if w else "",
                 f"Counting {d} day{'s' if d != 1 else ''} {'forward' if fwd else 'back'} from "
                 f"{DAYS[i]} gives {DAYS[j]}."]
        think = [t for t in think if t]
        ans = (f"In {n} days it will be {DAYS[j]}." if fwd else f"{n} days ago it was {DAYS[j]}.")
        return QA(q, think, ans, f"{DAYS[j]}.", {"topic": "day", "day": j, "it": DAYS[j],
                                                  "word": DAYS[j]})
    if r < 0.75:
        i = rng.randrange(12)
        n = rng.randint(1, 14)
        j = (i + n) % 12
        q = (f"What month comes after {MONTHS[i]}?" if n == 1 else
             f"Which month is {n} months after {MONTHS[i]}?")
        if n == 1:
            think = [f"The month after {MONTHS[i]} is {MONTHS[j]}."]
        else:
            steps = ", ".join(MONTHS[(i + k) % 12] for k in range(1, min(n, 12) + 1))
            think = [f"Counting {n} months forward from {MONTHS[i]}.",
                     (f"12 months brings me back to {MONTHS[i]}, then {n - 12} more. "
                      if n > 12 else f"{steps}. ") + f"That lands on {MONTHS[j]}."]
        ans = (f"{MONTHS[j]} comes after {MONTHS[i]}." if n == 1 else
               f"{n} months after {MONTHS[i]} is {MONTHS[j]}.")
        return QA(q, think, ans, f"{MONTHS[j]}.", {"topic": "month", "it": MONTHS[j],
                                                    "word": MONTHS[j]})
    i = rng.randrange(12)
    if rng.random() < 0.7:
        q = rng.choice([f"How many days are in {MONTHS[i]}?", f"How many days does {MONTHS[i]} have?"])
        if i == 1:
            think = ["February is the short month.",
                     "It has 28 days in a common year and 29 in a leap year."]
            ans, short = "February has 28 days, or 29 in a leap year.", "28, or 29 in a leap year."
        else:
            think = [f"{MONTHS[i]} has {MONTH_DAYS[i]} days."]
            ans, short = f"{MONTHS[i]} has {MONTH_DAYS[i]} days.", f"{MONTH_DAYS[i]}."
        return QA(q, think, ans, short, {"topic": "month", "it": MONTHS[i], "word": MONTHS[i]})
    ordn = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth"][i]
    q = f"What is the {ordn} month of the year?"
    think = [f"Counting from January, month number {i + 1} is {MONTHS[i]}."]
    return QA(q, think, f"The {ordn} month of the year is {MONTHS[i]}.", f"{MONTHS[i]}.",
              {"topic": "month", "it": MONTHS[i], "word": MONTHS[i]})


def qa_define(rng, corpus):
    word = rng.choice(sorted(DEFINITIONS))
    pos, definition = DEFINITIONS[word]
    q = rng.choice([f"What does {_quote(rng, word)} mean?", f"Define {word}.",
                    f"What is the meaning of the word {_quote(rng, word)}?",
                    f"What does the word {word} mean?"])
    think = [f"\"{cap(word)}\" is {article(pos)} {pos}.",
             f"It means {definition}."]
    if pos == "verb":
        long = f"\"{cap(word)}\" is a verb. It means {definition}."
    else:
        long = f"\"{cap(word)}\" is {article(pos)} {pos} meaning {definition}."
    return QA(q, think, long, cap(definition) + ".", {"topic": "word", "word": word, "it": word})


def spell(word):
    return "-".join(word.upper())


def qa_spell(rng, corpus, word=None):
    word = word or rng.choice(SPELL_WORDS)
    letters = ", ".join(word.lower())
    n = len(word)
    q = rng.choice([f"How do you spell {word}?", f"Spell the word {_quote(rng, word)} letter by letter.",
                    f"Can you spell {_quote(rng, word)} for me?"])
    think = [f"Going letter by letter through \"{word}\": {letters}.",
             f"That is {n} letters."]
    return QA(q, think, f"\"{word}\" is spelled {spell(word)}.", f"{spell(word)}.",
              {"topic": "word", "word": word, "it": word})


def qa_letters(rng, corpus, word=None, count_only=False):
    word = word or rng.choice(SPELL_WORDS)
    n = len(word)
    r = 0.0 if count_only else rng.random()
    numbered = ", ".join(f"{c} ({k + 1})" for k, c in enumerate(word.lower()))
    if r < 0.6:
        q = rng.choice([f"How many letters are in the word {_quote(rng, word)}?",
                        f"How many letters does {word} have?"])
        think = [f"Counting the letters of \"{word}\": {numbered}.", f"That makes {n}."]
        return QA(q, think, f"\"{word}\" has {n} letters.", f"{n}.",
                  {"topic": "word", "word": word, "it": word})
    first = rng.random() < 0.5
    letter = word[0] if first else word[-1]
    q = f"What is the {'first' if first else 'last'} letter of {_quote(rng, word)}?"
    think = [f"\"{word}\" is spelled {', '.join(word.lower())}.",
             f"The {'first' if first else 'last'} letter is {letter.lower()}."]
    return QA(q, think, f"The {'first' if first else 'last'} letter of \"{word}\" is "
              f"\"{letter.lower()}\".", f"{letter.upper()}.",
              {"topic": "word", "word": word, "it": word})


_PLAIN_TOKEN = re.compile(r"^[A-Za-z][A-Za-z'’-]*[,.;!?]?$")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z“\"(])")
_ABBREV_END = re.compile(r"\b(e\.g|i\.e|etc|vs|Mr|Mrs|Dr|St|No|cf|approx)\.$", re.I)


def split_sentences(par):
    """Split a paragraph at sentence ends, never after a known abbreviation."""
    out = []
    for piece in _SENT_SPLIT.split(par):
        if out and _ABBREV_END.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


def plain_sentences(corpus):
    """Short sentences of ordinary words from training prose, for word counting."""
    if getattr(corpus, "_plain", None) is None:
        found = []
        for par in corpus.train_paragraphs[::3]:
            for s in split_sentences(par):
                toks = s.split()
                if 5 <= len(toks) <= 16 and all(_PLAIN_TOKEN.match(t) for t in toks) \
                        and s[-1] in ".!?":
                    found.append(s)
        corpus._plain = found or ["The quick brown fox jumps over the lazy dog."]
    return corpus._plain


def qa_count_words(rng, corpus):
    s = rng.choice(plain_sentences(corpus))
    toks = s.split()
    n = len(toks)
    q = rng.choice([f"How many words are in this sentence: \"{s}\"",
                    f"Count the words in the following sentence.\n\n{s}",
                    f"How many words does this sentence have?\n{s}"])
    listing = ", ".join(f"{k + 1} {t.strip(',.;!?')}" for k, t in enumerate(toks))
    think = [f"I count the words one by one: {listing}.", f"That is {n} words."]
    return QA(q, think, f"The sentence has {n} words.", f"{n}.", {"topic": "number", "n": n})


def qa_sort(rng, corpus):
    if rng.random() < 0.5:
        k = rng.randint(3, 7)
        nums = rng.sample(range(0, rng.choice([20, 100, 1000])), k)
        desc = rng.random() < 0.3
        ordered = sorted(nums, reverse=desc)
        how = "from largest to smallest" if desc else "from smallest to largest"
        q = rng.choice([f"Sort these numbers {how}: {', '.join(map(str, nums))}.",
                        f"Put {', '.join(map(str, nums))} in order {how}."])
        end = "largest" if not desc else "smallest"
        think = [f"The {'smallest' if not desc else 'largest'} is {ordered[0]} and the {end} is {ordered[-1]}.",
                 f"In order {how}: {', '.join(map(str, ordered))}."]
        out = ", ".join(map(str, ordered))
        return QA(q, think, f"Sorted {how}: {out}.", f"{out}.",
                  {"topic": "list", "items": [str(x) for x in ordered], "numeric": True})
    pool = rng.choice([FRUITS, ANIMALS, COLOUR_WORDS])
    words = rng.sample(pool, rng.randint(3, 6))
    ordered = sorted(words)
    q = rng.choice([f"Put these words in alphabetical order: {', '.join(words)}.",
                    f"Sort alphabetically: {', '.join(words)}."])
    firsts = [w[0] for w in ordered]
    if len(set(firsts)) == len(firsts):
        think = [f"Their first letters are {', '.join(w[0] for w in words)}.",
                 f"In alphabetical order: {', '.join(ordered)}."]
    else:
        think = ["Some words share a first letter, so I compare their next letters too.",
                 f"In alphabetical order: {', '.join(ordered)}."]
    out = ", ".join(ordered)
    return QA(q, think, f"In alphabetical order: {out}.", f"{out}.",
              {"topic": "list", "items": ordered, "numeric": False})


def summary_paragraphs(corpus):
    if getattr(corpus, "_summ", None) is None:
        found = []
        for par in corpus.train_paragraphs:
            if not 300 <= len(par) <= 1200:
                continue
            sents = split_sentences(par)
            if len(sents) >= 3 and 40 <= len(sents[0]) <= 260 and sents[0][-1] in ".!?":
                found.append((par, sents[0]))
        corpus._summ = found
    return corpus._summ


def qa_summarize(rng, corpus):
    par, first = rng.choice(summary_paragraphs(corpus))
    q = rng.choice([f"Summarize this paragraph in one sentence:\n\n{par}",
                    f"Give me a one-sentence summary of the following text.\n\n{par}",
                    f"{par}\n\nCan you summarize that in a sentence?",
                    f"What is the main point of this paragraph?\n\n{par}"])
    think = ["The paragraph states its main point in the first sentence.",
             f"The first sentence is: {first}",
             "The remaining sentences add details, so the first sentence serves as the summary."]
    return QA(q, think, first, first, {"topic": "summary"})


def qa_arith(rng, corpus):
    a, op, b = arith.make_problem(rng)
    r = arith.apply(a, op, b)
    expr = arith.fmt_expr([a, op, b], "ascii")
    q = rng.choice([f"What is {expr}?", f"What's {expr}?", f"Can you work out {expr}?"])
    think = [f"{arith.explain(a, op, b, 'ascii')}.",
             f"Check: {arith.check(a, op, b, r, 'ascii')}. Correct."]
    return QA(q, think, f"{expr} = {r}.", f"{r}.", {"topic": "number", "n": r})


SINGLE = [(qa_capital, 5), (qa_colour, 3), (qa_animal, 3), (qa_planet, 3), (qa_units, 3),
          (qa_opposite, 3), (qa_calendar, 4), (qa_define, 4), (qa_spell, 3), (qa_letters, 2),
          (qa_count_words, 2), (qa_sort, 3), (qa_summarize, 3), (qa_arith, 1)]


def random_qa(rng, corpus, exclude=()):
    fns = [(f, w) for f, w in SINGLE if f not in exclude]
    f = rng.choices([f for f, _ in fns], [w for _, w in fns])[0]
    return f(rng, corpus)


# --------------------------------------------------------------------------------------
# Small talk
# --------------------------------------------------------------------------------------

def _me(style):
    name = style.get("name")
    return f"I'm {name}, an AI assistant" if name else "I'm an AI assistant"


def qa_smalltalk(rng, corpus, style):
    me = _me(style)
    name = style.get("name")
    # Thanks and goodbyes only make sense after an exchange (see qa_smalltalk_thanks), so
    # a conversation never opens with them.
    r = rng.choice([0, 0, 1, 3, 5, 6, 7])
    if r == 0:
        q = rng.choice(["Hi!", "Hello!", "Hey there.", "Good morning!", "Hi, how are you?",
                        "Hello, how are you doing today?", "Good evening."])
        think = ["The user is greeting me.", "I should greet them back and offer help."]
        ans = rng.choice(["Hello! How can I help you today?",
                          "Hi there! What can I do for you?",
                          "Hello! I'm doing well, thank you. How can I help?"])
        if q.startswith("Good morning"):
            ans = "Good morning! How can I help you today?"
        elif q.startswith("Good evening"):
            ans = "Good evening! What can I do for you?"
        return QA(q, think, ans, ans)
    if r == 1:
        q = rng.choice(["What's your name?", "Who are you?", "What should I call you?"])
        think = (["The user asks who I am.", f"My name is {name}."] if name else
                 ["The user asks who I am.", "I am an AI assistant and can say so plainly."])
        ans = f"{me}. I can answer questions, do arithmetic and help with small tasks."
        return QA(q, think, ans, f"{me}.")
    if r == 2:
        q = rng.choice(["Thank you!", "Thanks a lot.", "Thanks, that helps.", "Great, thanks!"])
        think = ["The user is thanking me.", "A short, friendly reply is right."]
        ans = rng.choice(["You're welcome!", "You're welcome! Let me know if you need anything else.",
                          "Glad I could help!"])
        return QA(q, think, ans, ans)
    if r == 3:
        q = rng.choice(["What can you do?", "How can you help me?", "What are you good at?"])
        think = ["The user wants to know what I can help with.",
                 "I can answer simple questions, explain words, do arithmetic and summarize text."]
        ans = ("I can answer general questions, explain what words mean, spell words, do "
               "arithmetic step by step, sort lists and summarize short texts.")
        return QA(q, think, ans, "Questions, definitions, spelling, arithmetic and summaries.")
    if r == 4:
        q = rng.choice(["Goodbye!", "Bye for now.", "See you later!"])
        think = ["The user is saying goodbye."]
        ans = rng.choice(["Goodbye! Have a great day.", "Bye! Come back any time.",
                          "See you later!"])
        return QA(q, think, ans, ans)
    if r == 5:
        q = rng.choice(["Can you tell me a fun fact?", "Tell me something interesting."])
        name_, kind, fact = rng.choice(PLANETS)
        think = ["The user wants an interesting fact.", f"A planet fact about {name_} works well."]
        ans = f"Here's one: {fact.replace('It', name_, 1)}"
        return QA(q, think, ans, ans)
    if r == 6:
        q = rng.choice(["I'm bored.", "I'm feeling a bit bored today."])
        think = ["The user is bored.", "I can suggest a quick activity I can help with."]
        ans = ("Sorry to hear that! Would you like a quick puzzle? For example: what "
               "is 12 × 12? Or I can tell you a fact about the planets.")
        return QA(q, think, ans, "How about a quick puzzle or a fun fact?")
    q = rng.choice(["How are you?", "How's it going?", "Are you having a good day?"])
    think = ["The user asks how I am.", "I should answer kindly and turn to how I can help."]
    ans = "I'm doing well, thank you for asking! How can I help you today?"
    return QA(q, think, ans, "Doing well, thanks! How can I help?")


# --------------------------------------------------------------------------------------
# Multi-turn chats (later turns refer to earlier ones)
# --------------------------------------------------------------------------------------

def _label(qa, kind):
    qa.kind = kind
    return qa


def _followups(rng, corpus, first):
    """Follow-up QAs that refer back to `first` with a pronoun; [] if none fits."""
    ctx = first.ctx
    topic = ctx.get("topic")
    if topic == "capital":
        others = [c for c in CAPITALS if c[0] != ctx["country"]]
        c2, k2, cont2 = rng.choice(others)
        opts = [QA(f"And {c2}?" if rng.random() < 0.5 else f"What about {c2}?",
                   [f"\"And {c2}?\" continues the question about capitals.",
                    f"The capital of {c2} is {k2}."],
                   f"The capital of {c2} is {k2}.", f"{k2}.",
                   {"topic": "capital", "country": c2, "capital": k2, "cont": cont2, "it": k2})]
        cap_ = ctx["capital"]
        if re.fullmatch(r"[A-Za-z]+", cap_):
            qa = qa_spell(rng, corpus, cap_)
            qa.q = rng.choice(["How do you spell that?", "Can you spell it for me?"])
            qa.think.insert(0, f"\"That\" refers to {cap_}, from my last answer.")
            opts.append(_label(qa, "spell"))
        if ctx.get("cont"):
            opts.append(_label(QA("Which continent is it on?",
                           [f"\"It\" is {ctx['country']}, the country we were talking about.",
                            f"{cap(ctx['country'])} is in {ctx['cont']}."],
                           f"{cap(ctx['country'])} is in {ctx['cont']}.", f"{ctx['cont']}."),
                               "continent"))
        return opts
    if topic == "planet" and "index" in ctx:
        i = ctx["index"]
        opts = []
        if i < 7:
            name2 = PLANETS[i + 1][0]
            opts.append(QA(rng.choice(["And the next one?", "Which one comes after it?"]),
                           [f"The previous planet was {PLANETS[i][0]}.",
                            f"The next planet out from the Sun is {name2}."],
                           f"After {PLANETS[i][0]} comes {name2}.", f"{name2}.",
                           {"topic": "planet", "index": i + 1, "it": name2}))
        name_, kind, fact = PLANETS[i]
        opts.append(_label(QA("Tell me a fact about it.",
                              [f"\"It\" means {name_}.", fact.replace("It", name_, 1)],
                              fact.replace("It", name_, 1), fact), "fact"))
        return opts
    if topic == "day":
        j = ctx["day"]
        return [QA(rng.choice(["And the day after that?", "What comes after that?"]),
                   [f"\"That\" is {DAYS[j]}.", f"The day after {DAYS[j]} is {DAYS[(j + 1) % 7]}."],
                   f"The day after {DAYS[j]} is {DAYS[(j + 1) % 7]}.", f"{DAYS[(j + 1) % 7]}.",
                   {"topic": "day", "day": (j + 1) % 7})]
    if topic == "word" and ctx.get("word") and re.fullmatch(r"[A-Za-z]+", ctx["word"]):
        w = ctx["word"]
        opts = []
        qa = qa_spell(rng, corpus, w)
        qa.q = rng.choice(["Can you spell it?", "How is that spelled?"])
        qa.think.insert(0, f"\"It\" refers to the word \"{w}\".")
        opts.append(_label(qa, "spell"))
        qa = qa_letters(rng, corpus, w, count_only=True)
        qa.q = rng.choice(["How many letters does it have?", "And how many letters is that?"])
        qa.think.insert(0, f"The word in question is \"{w}\".")
        opts.append(_label(qa, "letters"))
        if w in OPPOSITES:
            o = OPPOSITES[w]
            opts.append(_label(QA("What's the opposite of it?",
                                  [f"\"It\" is \"{w}\".", f"The opposite of \"{w}\" is \"{o}\"."],
                                  f"The opposite of \"{w}\" is \"{o}\".", f"{cap(o)}."),
                               "opposite"))
        return opts
    if topic == "list":
        items = ctx["items"]
        opts = [QA(rng.choice(["Now reverse the order.", "Can you reverse that list?"]),
                   [f"The sorted list was {', '.join(items)}.",
                    f"Reversed: {', '.join(reversed(items))}."],
                   f"Reversed: {', '.join(reversed(items))}.", ", ".join(reversed(items)) + ".")]
        opts[0].kind = "reverse"
        if ctx.get("numeric"):
            nums = [int(x) for x in items]
            big = max(nums)
            opts.append(_label(QA("Which of them is the largest?",
                           [f"From the list {', '.join(items)}, the largest is {big}."],
                           f"The largest is {big}.", f"{big}."), "largest"))
            total = sum(nums)
            chain = " + ".join(items)
            opts.append(_label(QA("What do they add up to?",
                           [f"Adding them: {chain} = {total}."],
                           f"They add up to {total}.", f"{total}."), "sum"))
        else:
            opts.append(_label(QA("Which one comes first?",
                                  [f"The first in alphabetical order is {items[0]}."],
                                  f"{cap(items[0])} comes first.", f"{cap(items[0])}."), "first"))
        return opts
    if topic == "number" and "n" in ctx and isinstance(ctx["n"], int) and 0 <= ctx["n"] < 1000:
        n = ctx["n"]
        op = rng.choice(["*", "+", "-"])
        k = rng.randint(2, 9) if op == "*" else rng.randint(1, 99)
        if op == "-" and k > n:
            op = "+"
        r = arith.apply(n, op, k)
        phr = {"*": f"Now multiply that by {k}.", "+": f"Add {k} to that.",
               "-": f"And subtract {k} from the result."}[op]
        expr = arith.fmt_expr([n, op, k], "ascii")
        return [QA(phr, [f"\"That\" is {n}, the previous answer.",
                         f"{arith.explain(n, op, k, 'ascii')}.",
                         f"Check: {arith.check(n, op, k, r, 'ascii')}. Correct."],
                   f"{expr} = {r}.", f"{r}.", {"topic": "number", "n": r})]
    return []


def build_turns(rng, corpus, style):
    """A list of QAs (2-4) for a multi-turn chat with references back."""
    scenario = rng.random()
    if scenario < 0.2:
        name = rng.choice(FIRST_NAMES)
        intro = QA(rng.choice([f"Hi, my name is {name}.", f"Hello! I'm {name}.",
                               f"Hey, I'm {name}. Nice to meet you."]),
                   [f"The user introduced themselves as {name}.", "I should greet them by name."],
                   f"Nice to meet you, {name}! How can I help you today?",
                   f"Nice to meet you, {name}!")
        turns = [intro]
        if rng.random() < 0.6:
            turns.append(random_qa(rng, corpus, exclude=(qa_summarize,)))
        turns.append(QA(rng.choice(["What's my name?", "Do you remember my name?",
                                    "Can you tell me my name again?"]),
                        [f"Earlier in this conversation the user said their name is {name}."],
                        f"Your name is {name}.", f"{name}."))
        return turns
    if scenario < 0.32:
        colour = rng.choice(COLOUR_WORDS)
        turns = [QA(f"My favourite colour is {colour}.",
                    [f"The user shares that their favourite colour is {colour}."],
                    f"{cap(colour)} is a lovely colour! Is there anything I can help you with?",
                    f"Nice! {cap(colour)} is a great colour.")]
        if rng.random() < 0.6:
            turns.append(random_qa(rng, corpus, exclude=(qa_summarize,)))
        turns.append(QA(rng.choice(["What is my favourite colour?",
                                    "Do you remember my favourite colour?"]),
                        [f"The user told me earlier that their favourite colour is {colour}."],
                        f"Your favourite colour is {colour}.", f"{cap(colour)}."))
        return turns
    if scenario < 0.45:
        q1 = random_qa(rng, corpus, exclude=(qa_summarize, qa_count_words))
        q2 = random_qa(rng, corpus, exclude=(qa_summarize, qa_count_words))
        while q2.q == q1.q:  # "my first question" must be unambiguous
            q2 = random_qa(rng, corpus, exclude=(qa_summarize, qa_count_words))
        which = rng.random() < 0.5
        target = q1 if which else q2
        return [q1, q2, QA(f"What was my {'first' if which else 'second'} question?",
                           [f"Looking back at the conversation, the user's "
                            f"{'first' if which else 'second'} question was: {target.q}"],
                           f"Your {'first' if which else 'second'} question was: \"{target.q}\"",
                           f"\"{target.q}\"")]
    # chains of follow-ups referring to the previous answer
    for _ in range(20):
        first = random_qa(rng, corpus, exclude=(qa_summarize, qa_count_words))
        turns = [first]
        want = rng.randint(2, 4)
        used = set()
        while len(turns) < want:
            # The same follow-up twice ("Can you spell it?" again) reads like a glitch;
            # only "and the next one?"-style questions may repeat.
            opts = [o for o in _followups(rng, corpus, turns[-1])
                    if o.kind is None or o.kind not in used]
            if not opts:
                break
            pick = rng.choice(opts)
            if pick.kind:
                used.add(pick.kind)
            turns.append(pick)
        if len(turns) >= 2:
            if rng.random() < 0.15:
                turns.append(qa_smalltalk_thanks(rng))
            return turns
    return [random_qa(rng, corpus), qa_smalltalk_thanks(rng)]


def qa_smalltalk_thanks(rng):
    if rng.random() < 0.25:
        return QA(rng.choice(["Goodbye!", "Bye for now.", "That's all, see you later!"]),
                  ["The user is saying goodbye."],
                  rng.choice(["Goodbye! Have a great day.", "Bye! Come back any time."]),
                  "Goodbye!")
    return QA(rng.choice(["Thanks!", "Thank you, that's helpful.", "Great, thanks!"]),
              ["The user is thanking me.", "A short, friendly reply is right."],
              rng.choice(["You're welcome! Happy to help.", "You're welcome!",
                          "Glad I could help! Let me know if you need anything else."]),
              "You're welcome!")


# --------------------------------------------------------------------------------------
# Episodes
# --------------------------------------------------------------------------------------

def answer_for(qa, style):
    return qa.short if style.get("brief") else qa.long


def think_for(qa, style, effort, first_turn=True):
    parts = list(qa.think)
    if style.get("brief") and first_turn and parts:
        parts = parts + ["The system prompt asks for brevity, so I will keep the answer short."]
    return trim_think(parts, effort)


def chat_sample(rng, corpus):
    system, style = pick_system(rng)
    thinking, effort = pick_settings(rng)
    r = rng.random()
    if r < 0.35:
        turns = build_turns(rng, corpus, style)
    elif r < 0.47:
        turns = [qa_smalltalk(rng, corpus, style)]
    else:
        turns = [random_qa(rng, corpus)]
    msgs = [{"role": "system", "content": system}] if system else []
    for k, qa in enumerate(turns[:-1]):
        msgs.append({"role": "user", "content": qa.q})
        # Earlier turns in history carry their reasoning; with thinking off the renderer
        # leaves it out, as the template does.
        msgs.append(Turn(think_for(qa, style, effort, first_turn=k == 0),
                         answer_for(qa, style)).message())
    last = turns[-1]
    msgs.append({"role": "user", "content": last.q})
    final = Turn(think_for(last, style, effort, first_turn=len(turns) == 1) if thinking else "",
                 answer_for(last, style))
    return Sample("chat", msgs, thinking, final, effort=effort,
                  meta={"turns": len(turns)})
