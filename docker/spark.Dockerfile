# A PySpark client with the Streamcat catalog plugin (the jar is compiled from source at build time).
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY registry registry
COPY catalog_api catalog_api
COPY migrations migrations
COPY spark_plugin spark_plugin
RUN pip install --no-cache-dir '.[spark]' && python -c "import spark_plugin; print(spark_plugin.jar_path())"
ENV PYSPARK_PYTHON=/usr/local/bin/python
WORKDIR /work
