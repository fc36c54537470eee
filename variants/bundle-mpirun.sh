#!/bin/sh
# The bundle's mpirun (bin/mpirun; variants/bundle.sh --mpi puts it there): Debian 12's Open MPI
# 4.1 from the bundle's mpi/ folder, on a machine that has no MPI installed:
#   BUNDLE/bin/mpirun -np 2 BUNDLE/bin/pragmaclust-gpu-mpi kmeans INPUT -k K ...
# Open MPI and PMIx find their components, help texts and settings in mpi/ through their
# relocation variables (OPAL_PREFIX, the OPAL_*DIR and PMIX_*DIR overrides; hwloc loads no
# plugins), the tools and components their libraries in lib/ through LD_LIBRARY_PATH; the ranks
# inherit all of it. Defaults that the caller's environment or mpirun's options override:
# - root may run it (OMPI_ALLOW_RUN_AS_ROOT*; Open MPI refuses root otherwise);
# - one machine, no network needed: the ranks talk through shared memory (btl self,vader) and
#   mpirun over loopback (oob_tcp_if_include lo); vader copies through its shared segment, not
#   process_vm_readv, which containers often forbid (btl_vader_single_copy_mechanism none);
# - no binding (hwloc_base_binding_policy none): Open MPI binds each of at most 2 ranks to one
#   core, which leaves an omp rank one thread's worth; OMP_NUM_THREADS shares the cores instead.
set -e
top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
mpi=$top/mpi
export OPAL_PREFIX="$mpi" OPAL_LIBDIR="$mpi/lib" OPAL_SYSCONFDIR="$mpi/etc"
export PMIX_LIBDIR="$mpi/lib" PMIX_DATADIR="$mpi/share" PMIX_SYSCONFDIR="$mpi/etc"
export HWLOC_PLUGINS_PATH="$mpi/lib/hwloc"
export LD_LIBRARY_PATH="$top/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$mpi/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM-1}"
export OMPI_MCA_btl="${OMPI_MCA_btl-self,vader}"
export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include-lo}"
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism-none}"
export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy-none}"
exec "$mpi/bin/mpirun" "$@"
