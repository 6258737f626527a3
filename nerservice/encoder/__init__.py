"""A frozen pretrained transformer's contextual token features for the tagger (``model.encoder``)."""
