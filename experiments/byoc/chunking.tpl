# chunking.tpl: a chunker's features, written for CoNLL-2000 (token, POS and chunk columns) in
# the manner of Sha & Pereira (2003): the words and POS tags in a window of two, their bigrams,
# POS trigrams, and a few spellings of the word itself. Every template is a node and an edge
# feature (x × y0 and x × y-1 × y0); features seen once in training are dropped (min_count 2).
bias
# the words around, as they are and lower-cased
w[-2..2]
lower(w[-2..2])
# word bigrams x-1 x0, x0 x+1
lower(w[-1..0])/lower(w[0..1])
# the POS tags around, their bigrams x-2 x-1 ... x+1 x+2 and trigrams
pos[-2..2]
pos[-2..1]/pos[-1..2]
pos[-2..0]/pos[-1..1]/pos[0..2]
# the word's own spelling
suffix2(w[0])
suffix3(w[0])
initcap(w[0])
