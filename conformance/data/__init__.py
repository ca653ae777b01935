"""Training data of the models tier: ``tiny_verse.txt``, the tiny Llama's character corpus
(:func:`conformance.models.char_corpus`)."""
