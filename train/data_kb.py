"""Built-in knowledge base for the synthetic chat data (English only, stable facts).

Facts are kept to ones that do not change from year to year and have one clear answer,
so the tiny model is never trained on a disputed or dated claim.  Countries with several
capitals or a capital in transition are left out for the same reason.
"""

# (country, capital, continent or None for transcontinental countries)
CAPITALS = [
    ("France", "Paris", "Europe"), ("Germany", "Berlin", "Europe"),
    ("Italy", "Rome", "Europe"), ("Spain", "Madrid", "Europe"),
    ("Portugal", "Lisbon", "Europe"), ("the United Kingdom", "London", "Europe"),
    ("Ireland", "Dublin", "Europe"), ("the Netherlands", "Amsterdam", "Europe"),
    ("Belgium", "Brussels", "Europe"), ("Switzerland", "Bern", "Europe"),
    ("Austria", "Vienna", "Europe"), ("Poland", "Warsaw", "Europe"),
    ("the Czech Republic", "Prague", "Europe"), ("Hungary", "Budapest", "Europe"),
    ("Greece", "Athens", "Europe"), ("Sweden", "Stockholm", "Europe"),
    ("Norway", "Oslo", "Europe"), ("Denmark", "Copenhagen", "Europe"),
    ("Finland", "Helsinki", "Europe"), ("Iceland", "Reykjavik", "Europe"),
    ("Romania", "Bucharest", "Europe"), ("Bulgaria", "Sofia", "Europe"),
    ("Serbia", "Belgrade", "Europe"), ("Croatia", "Zagreb", "Europe"),
    ("Slovakia", "Bratislava", "Europe"), ("Slovenia", "Ljubljana", "Europe"),
    ("Estonia", "Tallinn", "Europe"), ("Latvia", "Riga", "Europe"),
    ("Lithuania", "Vilnius", "Europe"), ("Ukraine", "Kyiv", "Europe"),
    ("Russia", "Moscow", None), ("Turkey", "Ankara", None),
    ("Egypt", "Cairo", "Africa"), ("Kenya", "Nairobi", "Africa"),
    ("Nigeria", "Abuja", "Africa"), ("Ghana", "Accra", "Africa"),
    ("Ethiopia", "Addis Ababa", "Africa"), ("Morocco", "Rabat", "Africa"),
    ("Algeria", "Algiers", "Africa"), ("Tunisia", "Tunis", "Africa"),
    ("Senegal", "Dakar", "Africa"), ("Uganda", "Kampala", "Africa"),
    ("Zimbabwe", "Harare", "Africa"),
    ("Japan", "Tokyo", "Asia"), ("China", "Beijing", "Asia"),
    ("South Korea", "Seoul", "Asia"), ("India", "New Delhi", "Asia"),
    ("Pakistan", "Islamabad", "Asia"), ("Bangladesh", "Dhaka", "Asia"),
    ("Thailand", "Bangkok", "Asia"), ("Vietnam", "Hanoi", "Asia"),
    ("the Philippines", "Manila", "Asia"), ("Malaysia", "Kuala Lumpur", "Asia"),
    ("Nepal", "Kathmandu", "Asia"), ("Mongolia", "Ulaanbaatar", "Asia"),
    ("Afghanistan", "Kabul", "Asia"), ("Iran", "Tehran", "Asia"),
    ("Iraq", "Baghdad", "Asia"), ("Saudi Arabia", "Riyadh", "Asia"),
    ("Qatar", "Doha", "Asia"), ("Jordan", "Amman", "Asia"),
    ("Lebanon", "Beirut", "Asia"), ("Syria", "Damascus", "Asia"),
    ("Australia", "Canberra", "Oceania"), ("New Zealand", "Wellington", "Oceania"),
    ("Canada", "Ottawa", "North America"),
    ("the United States", "Washington, D.C.", "North America"),
    ("Mexico", "Mexico City", "North America"), ("Cuba", "Havana", "North America"),
    ("Jamaica", "Kingston", "North America"),
    ("Brazil", "Brasília", "South America"), ("Argentina", "Buenos Aires", "South America"),
    ("Chile", "Santiago", "South America"), ("Peru", "Lima", "South America"),
    ("Colombia", "Bogotá", "South America"), ("Venezuela", "Caracas", "South America"),
    ("Uruguay", "Montevideo", "South America"), ("Ecuador", "Quito", "South America"),
    ("Paraguay", "Asunción", "South America"),
]

# (thing, colour) -- everyday objects with one typical colour.
COLOURS = [
    ("the sky on a clear day", "blue"), ("grass", "green"), ("snow", "white"),
    ("a ripe banana", "yellow"), ("coal", "black"), ("a ripe tomato", "red"),
    ("an orange", "orange"), ("milk chocolate", "brown"), ("milk", "white"),
    ("a lemon", "yellow"), ("a strawberry", "red"), ("a carrot", "orange"),
    ("a crow", "black"), ("a flamingo", "pink"), ("an emerald", "green"),
    ("a ruby", "red"), ("a sapphire", "blue"), ("a lime", "green"),
    ("an eggplant", "purple"), ("a polar bear's fur", "white"), ("a cherry", "red"),
    ("a pumpkin", "orange"), ("broccoli", "green"), ("lavender flowers", "purple"),
    ("a school bus in the United States", "yellow"), ("charcoal", "black"),
    ("a fire engine", "red"), ("a cucumber", "green"), ("a blueberry", "blue"),
]

# (animal, verb, sound word)
ANIMAL_SOUNDS = [
    ("dog", "barks", "woof"), ("cat", "meows", "meow"), ("cow", "moos", "moo"),
    ("sheep", "bleats", "baa"), ("pig", "oinks", "oink"), ("horse", "neighs", "neigh"),
    ("duck", "quacks", "quack"), ("hen", "clucks", "cluck"),
    ("rooster", "crows", "cock-a-doodle-doo"), ("lion", "roars", "roar"),
    ("owl", "hoots", "hoot"), ("snake", "hisses", "hiss"), ("frog", "croaks", "ribbit"),
    ("mouse", "squeaks", "squeak"), ("bee", "buzzes", "buzz"), ("donkey", "brays", "hee-haw"),
    ("wolf", "howls", "howl"), ("goat", "bleats", "maa"), ("crow", "caws", "caw"),
    ("dove", "coos", "coo"), ("turkey", "gobbles", "gobble"),
]

# (animal, baby name)
ANIMAL_BABIES = [
    ("dog", "puppy"), ("cat", "kitten"), ("cow", "calf"), ("sheep", "lamb"),
    ("horse", "foal"), ("pig", "piglet"), ("hen", "chick"), ("duck", "duckling"),
    ("lion", "cub"), ("bear", "cub"), ("kangaroo", "joey"), ("deer", "fawn"),
    ("frog", "tadpole"), ("goat", "kid"), ("goose", "gosling"), ("swan", "cygnet"),
]

# name, type, one well-known fact (a full sentence)
PLANETS = [
    ("Mercury", "rocky", "It is the smallest planet and the closest to the Sun."),
    ("Venus", "rocky", "It is the hottest planet because its thick atmosphere traps heat."),
    ("Earth", "rocky", "It is the only planet known to support life."),
    ("Mars", "rocky", "It is called the Red Planet because of the iron oxide dust on its surface."),
    ("Jupiter", "gas giant", "It is the largest planet in the Solar System."),
    ("Saturn", "gas giant", "It is famous for its bright system of rings."),
    ("Uranus", "ice giant", "It rotates on its side, with its axis tilted almost flat."),
    ("Neptune", "ice giant", "It is the farthest planet from the Sun."),
]

# (question noun phrase, larger unit, smaller unit, factor): 1 larger = factor smaller
UNITS = [
    ("metres in a kilometre", "kilometre", "metres", 1000),
    ("centimetres in a metre", "metre", "centimetres", 100),
    ("millimetres in a centimetre", "centimetre", "millimetres", 10),
    ("grams in a kilogram", "kilogram", "grams", 1000),
    ("millilitres in a litre", "litre", "millilitres", 1000),
    ("seconds in a minute", "minute", "seconds", 60),
    ("minutes in an hour", "hour", "minutes", 60),
    ("hours in a day", "day", "hours", 24),
    ("days in a week", "week", "days", 7),
    ("months in a year", "year", "months", 12),
    ("inches in a foot", "foot", "inches", 12),
    ("feet in a yard", "yard", "feet", 3),
    ("ounces in a pound", "pound", "ounces", 16),
    ("years in a decade", "decade", "years", 10),
    ("years in a century", "century", "years", 100),
    ("things in a dozen", "dozen", "things", 12),
]
# Units that can be scaled in "how many X in N Y" questions (singular, plural, smaller).
UNIT_CONVERSIONS = [
    ("kilometre", "kilometres", "metres", 1000), ("metre", "metres", "centimetres", 100),
    ("kilogram", "kilograms", "grams", 1000), ("litre", "litres", "millilitres", 1000),
    ("minute", "minutes", "seconds", 60), ("hour", "hours", "minutes", 60),
    ("day", "days", "hours", 24), ("week", "weeks", "days", 7),
    ("year", "years", "months", 12), ("foot", "feet", "inches", 12),
    ("yard", "yards", "feet", 3), ("dozen", "dozen", "eggs", 12),
]

OPPOSITE_PAIRS = [
    ("hot", "cold"), ("big", "small"), ("up", "down"), ("fast", "slow"),
    ("happy", "sad"), ("early", "late"), ("full", "empty"), ("hard", "soft"),
    ("high", "low"), ("long", "short"), ("in", "out"), ("left", "right"),
    ("loud", "quiet"), ("near", "far"), ("rich", "poor"), ("strong", "weak"),
    ("thick", "thin"), ("wet", "dry"), ("win", "lose"), ("push", "pull"),
    ("buy", "sell"), ("day", "night"), ("north", "south"), ("east", "west"),
    ("true", "false"), ("question", "answer"), ("heavy", "light"), ("clean", "dirty"),
    ("always", "never"), ("first", "last"), ("inside", "outside"), ("above", "below"),
    ("friend", "enemy"), ("accept", "refuse"), ("arrive", "leave"), ("brave", "cowardly"),
    ("cheap", "expensive"), ("deep", "shallow"), ("easy", "difficult"), ("wide", "narrow"),
    ("safe", "dangerous"), ("sweet", "sour"), ("polite", "rude"), ("asleep", "awake"),
    ("remember", "forget"), ("begin", "end"), ("open", "shut"), ("give", "take"),
]


def _opposites():
    seen = {}
    for a, b in OPPOSITE_PAIRS:
        for x, y in ((a, b), (b, a)):
            seen.setdefault(x, []).append(y)
    # A word with two different opposites would make the answer ambiguous; drop it.
    return {w: v[0] for w, v in sorted(seen.items()) if len(set(v)) == 1}


OPPOSITES = _opposites()

# word: (part of speech, definition without a final full stop)
DEFINITIONS = {
    "generous": ("adjective", "willing to give more money, time or help than is expected"),
    "ancient": ("adjective", "very old, or belonging to a time long ago"),
    "curious": ("adjective", "eager to know or learn about something"),
    "fragile": ("adjective", "easily broken or damaged"),
    "honest": ("adjective", "telling the truth and not cheating or stealing"),
    "humble": ("adjective", "not proud, and not thinking of yourself as better than others"),
    "enormous": ("adjective", "extremely large"),
    "brief": ("adjective", "lasting only a short time"),
    "vivid": ("adjective", "very bright in colour, or producing clear pictures in the mind"),
    "patient": ("adjective", "able to wait calmly without getting annoyed"),
    "reliable": ("adjective", "able to be trusted to do what is expected"),
    "rapid": ("adjective", "happening or moving very quickly"),
    "silent": ("adjective", "making no sound at all"),
    "ordinary": ("adjective", "normal and not special in any way"),
    "obvious": ("adjective", "easy to see or understand"),
    "library": ("noun", "a building or room where books are kept for people to read or borrow"),
    "harbour": ("noun", "a sheltered area of water where ships can stay safely"),
    "journey": ("noun", "the act of travelling from one place to another"),
    "recipe": ("noun", "a set of instructions for preparing a dish"),
    "island": ("noun", "a piece of land completely surrounded by water"),
    "orchard": ("noun", "a piece of land where fruit trees are grown"),
    "volcano": ("noun", "a mountain with an opening through which lava, ash and gas can erupt"),
    "glacier": ("noun", "a large, slowly moving mass of ice"),
    "telescope": ("noun", "an instrument that makes distant objects look nearer and larger"),
    "calendar": ("noun", "a chart showing the days, weeks and months of a year"),
    "umbrella": ("noun", "a folding frame covered with cloth that protects you from rain"),
    "habit": ("noun", "something you do regularly, often without thinking about it"),
    "courage": ("noun", "the ability to do something that frightens you"),
    "festival": ("noun", "a special day or period of celebration"),
    "puzzle": ("noun", "a game or problem that tests your cleverness"),
    "neighbour": ("noun", "a person who lives next to or near you"),
    "rhythm": ("noun", "a regular, repeated pattern of sounds or movements"),
    "serendipity": ("noun", "the luck of finding something good without looking for it"),
    "algorithm": ("noun", "a step-by-step set of rules for solving a problem"),
    "whisper": ("verb", "to speak very quietly, using your breath rather than your voice"),
    "borrow": ("verb", "to take something that belongs to someone else, meaning to give it back"),
    "wander": ("verb", "to walk around slowly without a clear purpose or direction"),
    "explore": ("verb", "to travel through an unfamiliar place to learn about it"),
    "improve": ("verb", "to make something better, or to become better"),
    "gather": ("verb", "to bring things or people together into one place"),
    "predict": ("verb", "to say what you think will happen in the future"),
    "celebrate": ("verb", "to do something enjoyable for a special occasion"),
    "hesitate": ("verb", "to pause before doing or saying something because you are unsure"),
    "imagine": ("verb", "to form a picture or idea of something in your mind"),
    "persuade": ("verb", "to make someone agree to do or believe something by giving reasons"),
    "quickly": ("adverb", "at a fast speed"),
    "rarely": ("adverb", "not often"),
    "together": ("adverb", "with each other, or in one group"),
}

# Words that are good to spell out letter by letter.
SPELL_WORDS = sorted(set(
    list(DEFINITIONS) +
    [a for a, _, _ in ANIMAL_SOUNDS] +
    ["elephant", "giraffe", "banana", "necessary", "beautiful", "Wednesday", "February",
     "restaurant", "chocolate", "butterfly", "mountain", "bicycle", "yesterday", "answer",
     "pencil", "garden", "orange", "strawberry", "school", "friend", "because", "people",
     "weather", "computer", "language", "window", "kitchen", "rainbow", "sandwich",
     "dinosaur", "penguin", "octopus", "pyramid", "lighthouse", "adventure", "tomorrow"]))

FRUITS = ["apple", "banana", "cherry", "grape", "kiwi", "lemon", "mango", "melon", "orange",
          "peach", "pear", "plum", "apricot", "fig", "lime", "papaya", "date", "guava"]
ANIMALS = ["ant", "bear", "cat", "deer", "eagle", "fox", "goat", "horse", "ibis", "jaguar",
           "koala", "lion", "moose", "newt", "otter", "panda", "quail", "rabbit", "seal",
           "tiger", "urchin", "viper", "walrus", "yak", "zebra", "beaver", "camel", "dolphin"]
COLOUR_WORDS = ["red", "blue", "green", "yellow", "purple", "orange", "pink", "brown",
                "black", "white", "grey", "teal", "violet", "indigo"]

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

FIRST_NAMES = ["Alice", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hiro", "Ines",
               "James", "Kofi", "Lena", "Mateo", "Nadia", "Oscar", "Priya", "Quinn", "Rosa",
               "Sam", "Tara", "Umar", "Vera", "Wei", "Xena", "Yusuf", "Zoe", "Liam", "Maya",
               "Noah", "Olga", "Pablo", "Sara", "Tom", "Anna", "Leo", "Mia"]

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine", "ten", "eleven", "twelve"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
