"""nerservice: distributed biomedical named-entity recognition (Bi-LSTM-CNN-Char-CRF).

The package is a pure library: it never imports pyspark or fastapi at module level, and heavy
frameworks (keras/tensorflow) are imported only by the modules that need them.
"""
__version__ = "0.1.0"
