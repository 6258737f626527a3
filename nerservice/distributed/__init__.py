"""Spark side of nerservice: distributed preprocessing, synchronous multi-worker training on the
executors (one barrier stage, TF MultiWorkerMirroredStrategy) and distributed batch inference.

Pure-Python parts (rendezvous, TF_CONFIG, GPU pinning, splits, stats, the per-worker task) can be
imported and tested without Spark; pyspark is imported only inside the functions that need it, so
``import nerservice.distributed`` stays cheap on drivers, executors and API servers alike.

Driver entry points (thin ``spark_jobs/*.py`` shells call them):
    preprocess_job.run_preprocess   files/globs → Parquet splits + stats.json + quarantine (+ word2vec)
    train_job.run_training          Parquet → N-worker barrier stage → saved/registered model + summary
    predict_job.run_predict         texts → entities with offsets, one Extractor per executor worker
"""
