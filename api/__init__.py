"""The REST inference service (FastAPI + uvicorn): ``api.main:app``; see api/README.md."""
