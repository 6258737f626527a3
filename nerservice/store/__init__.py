"""The model store: MLflow tracking + Model Registry behind a small facade (see model_store.py).

Nothing here imports mlflow at module level; it is imported on first use (~2.3 s).
"""
from nerservice.store.callback import StoreCallback
from nerservice.store.model_store import ModelStore
from nerservice.store.refs import ModelRef, parse_ref, validate_alias, validate_name

__all__ = ["ModelStore", "StoreCallback", "ModelRef", "parse_ref", "validate_name", "validate_alias"]
