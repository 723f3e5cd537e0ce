#!/bin/sh
# Open MPI's rsh agent for the test cluster (tests/e2e/cluster/cluster.py), in
# place of ssh: `rsh_agent.sh HOST COMMAND...` runs COMMAND with /bin/sh on
# HOST, entering its namespaces. Like ssh it starts from a clean environment
# (only PATH and HOME), so what reaches the ranks is what mpirun forwards
# (-x, its own OMPI_* variables), as on real hosts. The cluster's prefix
# comes from DMLP_CLUSTER_PREFIX (default dmlp27), as in cluster.py.
set -eu
host=$1
shift
prefix=${DMLP_CLUSTER_PREFIX:-dmlp27}
# The hosts share one mount namespace; called from a host (mpirun's, as here)
# we are in it already, and there its file is not bound (an empty file).
mount_namespace=
if [ "$(stat -f -c %T "/run/${prefix}/mnt")" = nsfs ]; then
  mount_namespace="--mount=/run/${prefix}/mnt"
fi
# shellcheck disable=SC2086 # $mount_namespace: one word or none
exec nsenter --net="/run/netns/${prefix}-${host}" --uts="/run/${prefix}/${host}.uts" \
  $mount_namespace --wd=/ -- \
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
  /bin/sh -c "$*"
