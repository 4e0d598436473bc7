# kafkette's image: `docker compose up` builds it (see docker-compose.yml).
#   docker build -t kafkette .                     the broker (target "kafkette")
#   docker build --target examples -t kafkette-examples .
FROM python:3.12-slim AS kafkette
ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_NO_CACHE_DIR=1
WORKDIR /src
# Only what the package needs; installed into the image's site-packages (a writable place).
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY broker ./broker
COPY coordinator ./coordinator
COPY storage ./storage
COPY pipeline ./pipeline
RUN pip install . && rm -rf /src/build
WORKDIR /var/lib/kafkette
VOLUME /var/lib/kafkette
EXPOSE 9092 19092
# Exec form: kafkette gets SIGTERM from `docker stop` and shuts down cleanly.
ENTRYPOINT ["kafkette"]
CMD ["serve", "--override", "listeners=PLAINTEXT://0.0.0.0:9092", "--override", "log.dirs=/var/lib/kafkette"]
HEALTHCHECK --interval=2s --timeout=3s --start-period=10s --retries=30 \
    CMD ["python", "-m", "kafkette.broker.cli.healthcheck", "127.0.0.1:9092"]

# The compose file's example producer and consumer (aiokafka), and the development certificates
# of its SASL_SSL example (cryptography).
FROM kafkette AS examples
RUN pip install aiokafka==0.14.0 cryptography==48.0.0
WORKDIR /examples
COPY examples/producer.py examples/consumer.py examples/client_settings.py examples/dev_certs.py ./
ENTRYPOINT []
HEALTHCHECK NONE
