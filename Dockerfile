# dmlp image: the job of spec.json (same base, same apt packages, same ENV;
# tests/e2e/image/image_agreement.py fails when the two disagree) with
# dmlp-launch, dmlp-train and dmlp-verify built for sm_89 (L4) and sm_90
# (H100/H200), tested, and installed on PATH.
#
#   docker build -t dmlp --build-arg DMLP_GIT_COMMIT="$(git rev-parse HEAD)" \
#     --build-arg DMLP_GIT_DIRTY="$(test -z "$(git status --porcelain)" && echo false || echo true)" .
#   docker run --rm --gpus all -v "$PWD/out:/workspace/out" -e OUT_DIR=/workspace/out/run-1 \
#     -e DMLP_IMAGE_ID="$(docker inspect -f '{{.Id}}' dmlp)" dmlp
#
# Stages: `base` (CUDA devel image + packages) is shared; `build` compiles and
# runs the CPU test suite; the final image is `base` plus the installed
# programs, without the build tree. Every RUN below is a command CI also runs
# (tools/test-all.sh, tools/install-deps.sh --build; see docs/developing.md "Docker"), and
# tools/rehearse.sh runs the build stage's RUN lines as they are written here
# (part `trixie`) and builds and runs this whole file with podman (part `image`).
# `podman build` works as `docker build` does (docs/developing.md "Docker").

# The base is a build argument so that `tools/rehearse.sh image` can build this
# file, unchanged, on a stand-in base made where the real one cannot be pulled.
# Its default is spec.json's base (image.agreement checks the two agree).
ARG BASE_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu24.04
FROM ${BASE_IMAGE} AS base
# Packages: exactly spec.json's image.apt (= tools/install-deps.sh --build).
# NCCL (libnccl-dev 2.25.1+cuda12.8) and cuBLAS come with the base image,
# pinned there with apt-mark hold; naming them would ask apt to change them.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ \
      make \
      cmake \
      pkg-config \
      libcli11-dev \
      libyaml-cpp-dev \
      nlohmann-json3-dev \
      libssl-dev \
      libgtest-dev \
      libgmock-dev \
      libgloo-dev \
      libblis-openmp-dev \
      python3 \
      procps \
 && rm -rf /var/lib/apt/lists/*

FROM base AS build
# The build's identity (common/build_info.h): the context has no .git
# (.dockerignore), so the commit comes in as build arguments, which
# tools/image-build.sh passes to CMake; left empty, the programs say
# "commit: unknown". The image id exists only after the build: it comes in at
# run time as DMLP_IMAGE_ID (docs/developing.md "Docker").
ARG DMLP_GIT_COMMIT=""
ARG DMLP_GIT_DIRTY=""
WORKDIR /src/dmlp
COPY . .
# Configure Release for sm_89 and sm_90 with the CUDA platform required, build,
# run the CPU test suite (all of it; the CUDA unit tests skip themselves
# without a GPU), install. tools/image-build.sh holds the commands, so that
# tools/rehearse.sh runs these same RUN lines in a Debian 13 root with GCC 13.
RUN tools/image-build.sh build
RUN tools/image-build.sh test
RUN tools/image-build.sh install /opt/dmlp

FROM base
COPY --from=build /opt/dmlp/ /usr/local/
# The job: exactly spec.json's image.env. Set only in the final stage so the
# test suite above runs with the environment its tests choose.
# NCCL_SOCKET_IFNAME=lo is for one host (the spec's 8 GPUs): across hosts it
# is wrong, NCCL cannot reach the other hosts. Override it with the hosts'
# interface (docker run -e NCCL_SOCKET_IFNAME=eth0; docs/several-hosts.md).
ENV PLATFORM=cuda \
    STEPS=1200 \
    SEED=42 \
    OUT_DIR=/workspace/out \
    LEARNING_RATE=0.001 \
    BATCH=4096 \
    MICROBATCHES=8 \
    NUM_PROCESSES=8 \
    DATA_SHARDS=8 \
    COORDINATOR_PORT=12355 \
    FEATURES=512 \
    WIDTH=2048 \
    LAYERS=3 \
    CLASSES=10 \
    NCCL_SHM_DISABLE=1 \
    NCCL_SOCKET_IFNAME=lo \
    HEARTBEAT_TIMEOUT_SECONDS=86400
WORKDIR /workspace
# run.sh: check the environment, list the GPUs, dmlp-launch, dmlp-verify.
CMD ["/usr/local/share/dmlp/run.sh"]
