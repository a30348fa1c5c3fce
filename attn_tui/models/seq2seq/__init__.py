"""A small GRU encoder-decoder with Bahdanau (or Luong general) attention that normalises dates."""
