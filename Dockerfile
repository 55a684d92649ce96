# The exporter image: the binary only, on distroless (glibc, no shell, no package manager).
#   docker build -t gpuledger:0.1.0 .        (or: podman build / buildah bud)
# Its default user is non-root, which sees only that user's processes; the Kubernetes DaemonSet
# (deploy/kubernetes/daemonset.yaml) runs it as uid 0 with SYS_PTRACE and DAC_READ_SEARCH only,
# which reading other users' fdinfo needs.
FROM docker.io/library/rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && cp target/release/gpuledger /gpuledger

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /gpuledger /usr/local/bin/gpuledger
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/gpuledger"]
CMD ["serve", "--listen", ":9464"]
