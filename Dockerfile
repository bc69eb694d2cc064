# depl-controller's container image. Two stages: build on debian:bookworm with the packages
# `make deps` installs (the Makefile is the single list), then run on debian:bookworm-slim with
# only the shared libraries the binary links. tests/controller/dockerfile_test.cpp runs ldd on the
# built binary and checks the runtime apt-get list below is exactly their Debian packages.
#
#   docker build -t ghcr.io/depl-dev/depl-controller:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so editing sources does not reinstall them.
COPY Makefile ./
RUN make deps && rm -rf /var/lib/apt/lists/*
COPY . .
RUN rm -rf build && make build BUILD=build

FROM debian:bookworm-slim
# Exactly the packages of `ldd build/bin/depl-controller` (kept so by dockerfile_test.cpp).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libc6 libfmt9 libgcc-s1 libspdlog1.10 libssl3 libstdc++6 libtcmalloc-minimal4 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/depl-controller /usr/local/bin/depl-controller
# The chart runs it as 65532 with a read-only root filesystem; nothing is written to disk.
USER 65532:65532
EXPOSE 8080 8081 8082
ENTRYPOINT ["/usr/local/bin/depl-controller"]
