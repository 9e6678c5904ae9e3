#!/usr/bin/env bash
# Installs the S3 benchmark tools into .cache/bin (gitignored):
#   warp v1.0.0  the module proxy refuses `go install ...warp@latest` and most
#                1.x versions; v1.0.0 builds from its downloaded module dir.
#   minio        `go install github.com/minio/minio@latest` (~4 min on 2 cores).
# Already-installed tools are kept; FORCE=1 rebuilds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CAIRN_BENCH_BIN:-$root/.cache/bin}
mkdir -p "$bin"

if [[ ${FORCE:-0} == 1 || ! -x $bin/warp ]]; then
	echo "install.sh: building warp v1.0.0" >&2
	# Outside the repo, so our go.mod is untouched.
	dir=$(cd /tmp && GONOSUMDB=github.com/minio/warp GOFLAGS=-mod=mod go mod download -json github.com/minio/warp@v1.0.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	(cd "$dir" && GONOSUMDB=github.com/minio/warp GOFLAGS=-mod=mod go build -o "$bin/warp" .)
fi

if [[ ${FORCE:-0} == 1 || ! -x $bin/minio ]]; then
	echo "install.sh: building minio@latest (about 4 minutes on 2 cores)" >&2
	(cd /tmp && GOBIN=$bin go install github.com/minio/minio@latest)
fi

"$bin/warp" --version >&2
"$bin/minio" --version 2>&1 | head -1 >&2
