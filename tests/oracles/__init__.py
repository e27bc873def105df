"""Brute-force oracles the tests hold the dynamic programs and feature code against: plain loops
and enumeration over every structure, written for clarity, not speed.

    chain.py        path scores, the textbook Viterbi and forward loops, every path of a chain
    label_chunk.py  every segmentation of the label-chunk structure and its part scores
                    (Shimizu & Haas 2006, Figure 1's DP written plainly)
    non_local.py    Kazama & Torisawa's (2007) non-local features of a document, one at a time
"""
