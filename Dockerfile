# syntax=docker/dockerfile:1
# The otelcol-evalbridge container image (docs/deploy.md). The same image is
# built without a container daemon by `deploy/image/build.sh OUTPUT.tar`.
#
#   docker build --build-arg VERSION=$(deploy/version.sh) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t otelcol-evalbridge:$(deploy/version.sh) .

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
ARG VERSION=0.0.0-dev
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/otelcol-evalbridge ./cmd/otelcol-evalbridge

# A static binary needs nothing but the CA certificates (from the Debian-based
# build stage) and its config.
FROM scratch
ARG VERSION=0.0.0-dev
ARG REVISION=""
ARG CREATED=1970-01-01T00:00:00Z
ARG SOURCE=https://github.com/evalbridge/evalbridge
LABEL org.opencontainers.image.title="otelcol-evalbridge" \
      org.opencontainers.image.description="OpenTelemetry Collector distribution that scores LLM agents from their traces" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/otelcol-evalbridge /otelcol-evalbridge
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY deploy/image/config.yaml /etc/otelcol-evalbridge/config.yaml
USER 10001
EXPOSE 4317 4318 8888 8889 13133
ENTRYPOINT ["/otelcol-evalbridge"]
CMD ["--config=/etc/otelcol-evalbridge/config.yaml"]
