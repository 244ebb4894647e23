# Everything that waits for a GPU, in priority order, each step under its own limit, logs
# under $OUT, a table of the steps last. Run from the repo root on the lent machine,
# carrying .whl, with the commit named (the device's copy of the tree may carry a stale
# .git; every result JSON records RING_GIT_COMMIT):
#   RING_GIT_COMMIT=<sha> bash tools/gpu-session.sh     (or STEPS="group cuda" ...)
# .whl, made here once (echo /.whl/ >> .git/info/exclude):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d .whl numpy==2.4.6 mpich==5.0.2
# The sweeps add 64M and their end size (-a) to the -f grid, which steps over both.
# NCCL >= 2.30 (the image has 2.28.9; its 216 MB wheel is more than a call carries), here:
#   python3 tools/nccl_wheel.py fetch --part-mb 55   # .nccl/: 4 parts of 55 MB and the sha256
# then one call per part in quick succession, each carrying only that part (the first also
# .nccl/<wheel>.sha256; the ~11 MB tree travels beside it, 64 MiB in all), with the command
#   python3 tools/nccl_wheel.py keep --to /tmp/nccl-parts     (= step ncclpart, without .whl)
# and last:  STEPS="launchgate nccl ncclcmp" bash tools/gpu-session.sh  (joins, installs to
# /tmp/nccl230; gpu-env.sh then points RING_NCCL_LIB at its libnccl.so.2 for every later step
# and call; launchgate first in any call that fires kept launches: it falls back to
# RING_LAUNCH=core for the call where the driver's launch fails)
# At most 8 files come back from $OUT: run a few steps per call (the MPS daemon's start
# logs go to /tmp; its exit status is printed). A session has 15 minutes of
# device time, start and idle included; what each step took on an H100 and an H200:
# results/gpu-session-timings.md (give a fresh machine's first step its Numba compiles).
# Steps: kernels group cuda cudanodes faults lifetime where profile groupbench cross sweep sweep4 nodes colls mps
#        kernelpath autopath inner suite alone kernelprofile kernelshapes kernelbench kernelsweep algos training pick kernelcache handoff all
#        ncclpart nccl ncclcmp launches commshapes halves launchgate
# DRY=1: print each step's command ("STEP name command") instead of running it, without a
# GPU or the carried wheels (tests/test_gpu_session.py checks every command that way)
if [ -n "$DRY" ]; then
  OUT=${OUT:-$(mktemp -d)}  # (the folders some steps make: never at /)
  nvidia-smi() { echo dry; }
  nvidia-cuda-mps-control() { :; }
else
  [ -n "$OUT" ] || { echo "OUT: the folder whose files come back, unset" >&2; exit 2; }
  . tools/gpu-env.sh || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | tr 'A-Z ' 'a-z-')
SUMMARY=""
# At its limit a step gets SIGINT first (pytest then prints what has passed and failed so
# far), SIGKILL 20 s later. Its summary line: pytest's last count line, else the first
# line that names a result.
step() { local limit=$1 name=$2 t0=$SECONDS rc line; shift 2
         if [ -n "$DRY" ]; then echo "STEP $name $(printf '%q ' "$@")"; return; fi
         timeout -s INT -k 20 $limit "$@" > $OUT/$name.txt 2>&1; rc=$?
         echo "== $name rc=$rc"; tail -${TAIL:-12} $OUT/$name.txt
         line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped|deselected)' $OUT/$name.txt | tail -1)
         [ -n "$line" ] || line=$(grep -E -m1 '(passed|failed|Avg bus|error)' $OUT/$name.txt)
         SUMMARY+="$(printf '%-24s rc=%-4s %5ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(echo "$line" | cut -c1-70)")"$'\n'
         STEP_RC=$rc; }
for s in ${STEPS:-group cuda groupbench sweep}; do case $s in
  kernels)    TAIL=22 step 120 explore python3 -m kernels.explore
              TAIL=10 step 60 launch_cost python3 -m kernels.launch_cost
              TAIL=3 step 200 bench python3 -m pytest tests/bench -q -p no:cacheprovider -o addopts= \
                  --benchmark-only --benchmark-json=$OUT/kernels-$GPU.json ;;
  group)      step 240 group python3 -m pytest tests/test_group.py tests/test_kernels.py tests/test_kernel_quantize.py -x -q -p no:cacheprovider ;;
  cuda)       step 420 cuda python3 -m pytest tests/test_mpi.py -x -q -p no:cacheprovider -k cuda_device_processes ;;
  cudanodes)  step 300 cudanodes python3 -m pytest tests/test_mpi.py -q -p no:cacheprovider --durations=0 -k "cuda_device_across${NODES_K:+ and $NODES_K}" ;;
  faults)     step 200 faults python3 -m pytest tests/test_faults.py -q -p no:cacheprovider --durations=0 -k "${FAULTS_K:-cuda}" ;;
  where)      TAIL=8 step 200 where python3 benchmarks/where_time_goes.py --json $OUT/where-time-goes-$GPU.json ;;
  profile)    # issue 52's host cost of a kept call: enqueue (stream-ordered) and blocking, under MPS
              # what one launch costs the host, by way (cuLaunchKernel, cuda.core, a graph of one
              # kernel node: cuGraphLaunch), and the event record and query beside it, before MPS
              # (logs and JSONs in one archive, profile.tgz; its acceptance.txt: enqueue_us_comm_k2)
              mkdir -p $OUT/profile; P="python3 benchmarks/profile_call.py"; J="$OUT/profile"
              TAIL=18 step 60 profile/launch python3 -m kernels.launch_cost
              nvidia-cuda-mps-control -d > /tmp/mps-profile.txt 2>&1; echo "== mps start rc=$?"
              TAIL=40 step 90 profile/group $P --group 4 --json $J/group-$GPU.json
              TAIL=40 step 90 profile/comm mpiexec -n 2 $P --path kernel --calls 2000 --json $J/comm-$GPU.json
              # before the driver's launch on a table of values (2026-11-28): cuda.core's, per value
              RING_LAUNCH=core TAIL=40 step 90 profile/core mpiexec -n 2 $P --path kernel --calls 2000 \
                  --json $J/core-$GPU.json
              # the driver's launch as a graph of one kernel node, one cuGraphLaunch (2026-11-28)
              RING_LAUNCH=graph TAIL=40 step 90 profile/graph mpiexec -n 2 $P --path kernel --calls 2000 \
                  --json $J/graph-$GPU.json
              # the host's own work without the launch: the launch's share is the difference
              TAIL=40 step 90 profile/nolaunch mpiexec -n 2 $P --path kernel --calls 2000 --no-launch \
                  --json $J/nolaunch-$GPU.json
              TAIL=40 step 90 profile/oneshot mpiexec -n 2 $P --path kernel --algorithm oneshot --calls 2000 \
                  --json $J/oneshot-$GPU.json
              TAIL=40 step 90 profile/blocking mpiexec -n 2 $P --path kernel --blocking --calls 2000 \
                  --json $J/blocking-$GPU.json
              echo quit | nvidia-cuda-mps-control
              TAIL=12 step 30 profile/acceptance python3 tools/acceptance.py $J/*-$GPU.json
              tar -C $OUT -czf $OUT/profile.tgz profile && rm -r $OUT/profile ;;
  groupbench) TAIL=40 step 420 groupbench python3 benchmarks/group_bench.py --quick ${GROUP_RANKS:+--ranks $GROUP_RANKS} \
                  --json $OUT/group${GROUP_RANKS:+-k${GROUP_RANKS//,/-}}-$GPU.json ;;
  lifetime)   step 150 lifetime-group python3 -m pytest tests/test_group.py -q -p no:cacheprovider -k thousand
              step 300 lifetime-comm python3 -m pytest -q -p no:cacheprovider --durations=3 \
                  "tests/test_mpi.py::test_cuda_device_processes_sharing_a_gpu[2]" ;;
  sweep)      TAIL=20 step 300 sweep2 mpiexec -n 2 python3 -m harness allreduce -b 8 -e 1G -f 4 -a 64M,1G -n ${ITERS:-10} -w 2 \
                  --device cuda --impl ring,nccl,mpi --nccl-hostid --json $OUT/allreduce-2ranks-$GPU.json ;;
  sweep4)     TAIL=20 step 420 sweep4 mpiexec -n 4 python3 -m harness allreduce -b 8 -e ${MAX:-1G} -f 4 -a 64M,${MAX:-1G} -n ${ITERS:-10} -w 2 --device cuda \
                  --impl ring,nccl,mpi --nccl-hostid --json $OUT/allreduce-4ranks-$GPU.json ;;
  nodes)      RING_NODES=2 step 300 nodes mpiexec -n 4 python3 -m harness allreduce -b 1M -e 256M -f 4 \
                  --device cuda --impl ring-hier,ring-flat,mpi --json $OUT/allreduce-2nodes-$GPU.json ;;
  colls)      mkdir -p $OUT/colls  # one archive comes back: the tool returns at most 8 files
              # MPS=1: under MPS, where IMPL may name ring-kernel (processes sharing the GPU)
              [ -n "$MPS" ] && { nvidia-cuda-mps-control -d > $OUT/colls/mps.txt 2>&1; echo "== mps start rc=$?"; }
              for c in ${COLLS:-reduce_scatter allgather broadcast reduce gather scatter alltoall}; do
                step ${COLL_LIMIT:-120} colls/$c-${NP:-2} mpiexec -n ${NP:-2} python3 -m harness $c -b 8 -e ${MAX:-256M} -f 8 -a 64M,${MAX:-256M} \
                  -n ${ITERS:-10} -w ${WARM:-2} --device cuda --impl ${IMPL:-ring,nccl,mpi} --nccl-hostid \
                  --json $OUT/colls/$c-${NP:-2}ranks${MPS:+-mps}-$GPU.json; done
              [ -n "$MPS" ] && echo quit | nvidia-cuda-mps-control
              tar -C $OUT -czf $OUT/colls.tgz colls && rm -r $OUT/colls ;;
  mps)        nvidia-cuda-mps-control -d > /tmp/mps.txt 2>&1; echo "== mps start rc=$?"; cat /tmp/mps.txt
              sleep 1; echo get_server_list | nvidia-cuda-mps-control 2>&1 | head -3
              TAIL=20 step 300 sweep${NP:-2}-mps mpiexec -n ${NP:-2} python3 -m harness allreduce -b 8 -e ${MAX:-256M} -f 8 -a 64M,${MAX:-256M} \
                  -n 10 -w 2 --device cuda --impl ring,nccl,mpi --nccl-hostid --json $OUT/allreduce-${NP:-2}ranks-mps-$GPU.json
              echo quit | nvidia-cuda-mps-control ;;
  kernelpath) # path="kernel" (issue 14), one call each: kernelpath (compiles, tests under MPS),
              # kernelbench (ring.Group: the 256 MiB acceptance case, host cost, enqueue time),
              # kernelsweep (2 and 4 processes beside the stream path and NCCL, under MPS:
              # processes sharing the GPU run persistent kernels concurrently only there)
              step 120 ptx python3 tools/compile_kernels.py --quick
              nvidia-cuda-mps-control -d > /tmp/mps-kernel.txt 2>&1; echo "== mps start rc=$?"
              step 480 kernelpath python3 -m pytest tests/test_mpi.py tests/test_faults.py tests/test_group.py -q \
                  -p no:cacheprovider --durations=0 --maxfail=${MAXFAIL:-5} -k "cuda_kernel_path or cuda-kernel or kernel"
              echo quit | nvidia-cuda-mps-control ;;
  autopath)   # path="auto" before it becomes the default: check_cuda.py with it at 2-4
              # processes (test_cuda_auto_path) and ring.Group's auto tests, under MPS; stops at
              # the first failure (give the call a limit above AUTO_LIMIT; step inner prints as
              # it goes, with RING_TEST_PATH=auto)
              nvidia-cuda-mps-control -d > /tmp/mps-kernel.txt 2>&1; echo "== mps start rc=$?"
              TAIL=60 step ${AUTO_LIMIT:-240} autopath python3 -m pytest tests/test_mpi.py tests/test_group.py -q \
                  -p no:cacheprovider --maxfail=${MAXFAIL:-1} --durations=5 -k "${AUTO_K:-cuda_auto_path or auto}"
              echo quit | nvidia-cuda-mps-control ;;
  suite)      # the GPU suite in one call (issue 13's "whole suite at one commit"): every test of
              # the GPU's own files and every test of the others that is named or marked cuda
              # or gpu (tests/gpu.py; test_gpu_session checks that suite and alone, together,
              # take every marked test), simulator off, under
              # MPS, over SUITE_N pytest-xdist workers (the image has xdist): Numba's compiles,
              # most of a GPU step's time, spread over the 16 cores. The kernel path's rings are
              # narrowed to SUITE_CHANNELS channels so that every worker's kernels are resident
              # at once (64 channels x 4 ranks alone fill an H100). Step alone runs the rest;
              # test_gpu_session (DRY runs: CI's, not the GPU's) is left out, though its name says gpu.
              # 6 workers: each a CUDA context, each test's mpiexec up to 6 more, within the
              # 48 clients that MPS takes on a GPU
              # RING_TEST_INNER_DUMP: an inner run's ranks print their stacks once a test has
              # run SUITE_DUMP seconds, which a failure shows first (tests/mpirun.py)
              nvidia-cuda-mps-control -d > /tmp/mps-suite.txt 2>&1; echo "== mps start rc=$?"
              RING_TEST_INNER_DUMP=${SUITE_DUMP:-50} \
              RING_KERNEL_CHANNELS=${SUITE_CHANNELS:-4} RING_TEST_INNER_K="not many_communicators" TAIL=40 \
                step ${SUITE_LIMIT:-450} suite python3 -m pytest ${SUITE_FILES:-tests} -v -p no:cacheprovider \
                  -n ${SUITE_N:-6} --dist worksteal --maxfail=${MAXFAIL:-10} --durations=15 \
                  -k "(${SUITE_K:-test_kernels or test_kernel_quantize or test_group or test_keep or cuda or gpu}) and not (thousand or cuts_its_channels or lifetime or test_gpu_session)"
              echo quit | nvidia-cuda-mps-control ;;
  alone)      # what step suite leaves out, one test at a time: the tests that read the GPU's free
              # memory (1000 groups, 1000 communicators at 2-4 processes, check_lifetime.py) and
              # the default shape's channel cut
              nvidia-cuda-mps-control -d > /tmp/mps-alone.txt 2>&1; echo "== mps start rc=$?"
              RING_TEST_INNER_DUMP=${SUITE_DUMP:-50} RING_TEST_INNER_K=many_communicators TAIL=12 \
                step ${ALONE_LIMIT:-200} alone python3 -m pytest \
                  tests/test_group.py tests/test_mpi.py -q -p no:cacheprovider --durations=8 \
                  -k "thousand or cuts_its_channels or cuda_device_processes_sharing_a_gpu or lifetime"
              echo quit | nvidia-cuda-mps-control ;;
  inner)      # an inner suite (INNER_FILE, default check_cuda.py) straight under mpiexec, under
              # MPS, its lines as they come (the outer test prints nothing before its 420 s
              # end): INNER_NP processes, -x, INNER_K, INNER_NODES emulated nodes; INNER_DUMP=s:
              # every rank prints its threads' stacks once a test has run s seconds (a hang:
              # where each rank waits); RING_TEST_PATH / RING_KERNEL_PROTO as exported;
              # INNER_TAG names the log
              nvidia-cuda-mps-control -d > /tmp/mps-inner.txt 2>&1; echo "== mps start rc=$?"
              TAIL=${INNER_TAIL:-40} RING_NODES=${INNER_NODES:-$RING_NODES} step ${INNER_LIMIT:-150} inner-${INNER_TAG:-1} \
                  mpiexec -n ${INNER_NP:-2} python3 -m pytest tests/mpi/${INNER_FILE:-check_cuda.py} -x -q -p no:cacheprovider \
                  -o python_files=check_*.py -o addopts= -o timeout=0 -o faulthandler_timeout=${INNER_DUMP:-0} \
                  --durations=5 ${INNER_K:+-k "$INNER_K"}
              echo quit | nvidia-cuda-mps-control ;;
  kernelprofile) # host time per 8-byte call on the kernel path, function by function
              nvidia-cuda-mps-control -d > /tmp/mps-kernel.txt 2>&1; echo "== mps start rc=$?"
              TAIL=40 step 90 profile-group-kernel python3 benchmarks/profile_call.py --group 2 --path kernel
              TAIL=40 step 120 profile-comm-kernel mpiexec -n 2 python3 benchmarks/profile_call.py --path kernel --algorithm ring
              echo quit | nvidia-cuda-mps-control ;;
  kernelshapes) TAIL=40 step 300 kernelshapes python3 benchmarks/group_bench.py --only-shapes \
                  --kernel-shapes ${SHAPES:-64x512x4x4xgpuxacqrelxsimple,64x512x4x4xgpuxacqrelxll,16x256x4x4xgpuxacqrelxll,64x512x4x4xgpuxfencexsimple} \
                  --json $OUT/group-kernel-shapes-$GPU.json ;;
  cross)      TAIL=40 step 420 cross python3 benchmarks/group_bench.py --cross --paths ${PATHS:-stream,kernel} \
                  --json $OUT/group-chunk-x-slots-$GPU.json ;;
  kernelbench) TAIL=40 step 540 groupbench-kernel python3 benchmarks/group_bench.py --quick --paths kernel,stream \
                  --json $OUT/group-kernel-$GPU.json ;;
  kernelsweep) nvidia-cuda-mps-control -d > /tmp/mps-kernel.txt 2>&1; echo "== mps start rc=$?"
              for np in ${NPS:-2 4}; do
                TAIL=30 step ${SWEEP_LIMIT:-270} sweep-kernel-$np mpiexec -n $np python3 -m harness allreduce -b 8 -e ${MAX:-256M} -f 4 -a 64M,${MAX:-256M} \
                  -n ${ITERS:-10} -w 2 --device cuda --impl ring-kernel,ring-stream,nccl,mpi --nccl-hostid \
                  --json $OUT/allreduce-${np}ranks-kernel-mps-$GPU.json; done
              echo quit | nvidia-cuda-mps-control ;;
  algos)      # issue 16's cuda columns: oneshot / twoshot through GPU areas (CUDA IPC; ring-twoshot+R:
              # the two-shot on registered buffers, in place), the other
              # algorithms on host copies, beside NCCL (>= 2.30 after the nccl step: its P2P
              # transport; else 2.28 over sockets, --nccl-hostid) and MPI, 8 B - 1 MB.
              # MPS=1: under MPS, where the ring's path="auto" is the persistent kernel (without
              # it the processes time-slice the GPU, the ring takes the stream path and NCCL crawls)
              [ -n "$MPS" ] && { nvidia-cuda-mps-control -d > /tmp/mps-algos.txt 2>&1; echo "== mps start rc=$?"; }
              for np in ${NPS:-2 4}; do
                TAIL=30 step 270 algos-$np mpiexec -n $np python3 -m harness allreduce -b 8 -e 1M -f 4 \
                  -n ${ITERS:-50} -w 5 --device cuda --algo ring,oneshot,twoshot,naive --impl ring-twoshot+R,nccl,mpi \
                  $([ -n "$RING_NCCL_LIB" ] || echo --nccl-hostid) --json $OUT/allreduce-${np}ranks-algos${MPS:+-mps}-$GPU.json; done
              # ... and the table "auto" could read on the cuda device (ring/tables/cuda.json): one
              # GPU shared by processes is not a node of GPUs, so commit it only labelled as such;
              # rules for staged buffers and for registered ones (TUNE_REG: either alone)
              for np in ${NPS:-2 4}; do for reg in ${TUNE_REG:-staged registered}; do
                TAIL=14 step 240 tune-$np-$reg mpiexec -n $np python3 -m harness tune --device cuda -b 8 \
                  -e ${TUNE_MAX:-64M} -f 4 --rounds 3 $([ $reg = registered ] && echo -R) \
                  $([ -f $OUT/cuda-table.json ] && echo --merge $OUT/cuda-table.json) \
                  --out $OUT/cuda-table.json; done; done
              [ -n "$MPS" ] && echo quit | nvidia-cuda-mps-control ;;
  training)   # issue 17's GPU half: the examples on CuPy arrays (their step times printed), torch
              # on CUDA tensors beside NCCL and gloo, int8 kernels; compression on the GPU
              TAIL=30 step 420 training python3 -m pytest tests/test_examples.py tests/test_torch.py \
                  tests/test_kernel_quantize.py -q -s -p no:cacheprovider -k "gpu or cuda or quantize"
              TAIL=12 step 240 compression-2 mpiexec -n 2 python3 benchmarks/compression.py --device cuda \
                  --sizes 1M,16M,64M,256M --json $OUT/compression-2ranks-$GPU.json ;;
  kernelcache) # a process's first persistent kernel: compiled, compiled and kept, loaded from
              # the disk cache (ring/cuda/kernel_cache.py), each in a fresh process
              TAIL=8 step 150 kernelcache python3 benchmarks/kernel_cache.py --json $OUT/kernel-cache-$GPU.json ;;
  handoff)    # one hand-off between two blocks (or two warps), by counter + fences or LL words:
              # what an 8-byte call's ring steps cost before the kernel is changed for it
              TAIL=12 step 120 handoff python3 benchmarks/handoff.py --json $OUT/handoff-$GPU.json ;;
  commshapes) # issue 53's shapes for processes sharing the GPU, under MPS, 64 / 256 MiB: the ring
              # kernel's threads per channel (RING_KERNEL_THREADS 512, the default, and 1024), 128
              # channels at 2 processes (64, the default), the two-shot's grid (its occupancy
              # share, the default, and 16 blocks, the old one), and the ring kernel an element
              # at a time (RING_KERNEL_VECTORS=0: before its 16-byte vectors, 2026-11-28)
              # (9 runs: one archive comes back, shapes.tgz, as colls does)
              mkdir -p $OUT/shapes
              nvidia-cuda-mps-control -d > /tmp/mps-shapes.txt 2>&1; echo "== mps start rc=$?"
              for np in ${NPS:-2 4}; do
                RING_KERNEL_VECTORS=0 TAIL=6 step 90 shapes/$np-scalar mpiexec -n $np python3 -m harness \
                  allreduce -b 64M -e 256M -f 4 -n 10 -w 2 --device cuda --impl ring-flat \
                  --json $OUT/shapes/${np}ranks-scalar-$GPU.json
                for t in 512 1024; do
                RING_KERNEL_THREADS=$t TAIL=6 step 90 shapes/$np-t$t mpiexec -n $np python3 -m harness allreduce \
                  -b 64M -e 256M -f 4 -n 10 -w 2 --device cuda --impl ring-flat,ring-twoshot ${REGISTER:+-R} \
                  --json $OUT/shapes/${np}ranks-threads$t-$GPU.json; done
                [ $np = 2 ] && RING_KERNEL_CHANNELS=128 TAIL=6 step 90 shapes/2-c128 mpiexec -n 2 python3 -m harness \
                  allreduce -b 64M -e 256M -f 4 -n 10 -w 2 --device cuda --impl ring-flat \
                  --json $OUT/shapes/2ranks-channels128-$GPU.json
                RING_TWOSHOT_BLOCKS=16 TAIL=6 step 90 shapes/$np-b16 mpiexec -n $np python3 -m harness allreduce \
                  -b 64M -e 256M -f 4 -n 10 -w 2 --device cuda --impl ring-twoshot ${REGISTER:+-R} \
                  --json $OUT/shapes/${np}ranks-twoshot16-$GPU.json; done
              echo quit | nvidia-cuda-mps-control
              tar -C $OUT -czf $OUT/shapes.tgz shapes && rm -r $OUT/shapes ;;
  launchgate) # first in a call, before anything fires a kept launch: the driver's launch on a
              # table of values (2026-11-28, not yet run on a GPU) on one kernel of every kind of
              # value; where it fails and cuda.core's passes, the call's later steps run with
              # RING_LAUNCH=core (so one packing fault does not sink the whole call)
              TAIL=8 step 120 launchgate python3 -m pytest tests/test_bound_launch.py -q -p no:cacheprovider \
                  -k "on_a_gpu and driver"
              if [ -n "$DRY" ] || [ "$STEP_RC" != 0 ]; then
                  TAIL=8 step 120 launchgate-core python3 -m pytest tests/test_bound_launch.py -q \
                      -p no:cacheprovider -k "on_a_gpu and core"
                  if [ -z "$DRY" ] && [ "$STEP_RC" = 0 ]; then
                      export RING_LAUNCH=core
                      echo "== launchgate: the driver's launch failed, cuda.core's passed: RING_LAUNCH=core from here"
                  fi
              fi ;;
  launches)   # the calls that are one launch on the caller's stream, first time on a GPU (2026-11-27,
              # simulator-tested), fired by cuLaunchKernel on a table of values (2026-11-28): stream order, blocking, errors at the next call / synchronize, the
              # call board (every kernel checks every rank's call on the GPU, 2026-11-28),
              # the one-shot and two-shot kernels (every op x dtype at 2), Top-K's kernels, under MPS
              nvidia-cuda-mps-control -d > /tmp/mps-launches.txt 2>&1; echo "== mps start rc=$?"
              LAUNCH_K="cuda_kernel_path and not fence or one_shot or two_shot or stream_ordered or registered or call_board"
              TAIL=30 step ${LAUNCH_LIMIT:-420} launches python3 -m pytest tests/test_bound_launch.py tests/test_mpi.py \
                  tests/test_faults.py tests/test_topk.py -q -p no:cacheprovider --durations=10 \
                  -k "$LAUNCH_K or kept_kernel or gpus_selection or on_a_gpu"
              echo quit | nvidia-cuda-mps-control ;;
  halves)     # issue 53's reduce-scatter and all-gather as the two-shot kernel (simulator-tested,
              # 2026-11-28) beside the ring kernel and NCCL (>= 2.30 after the nccl step), under MPS,
              # 8 B - 256 MiB, the two-shot staged and registered (ring-twoshot+R: reduce-scatter's x
              # read and all-gather's out written in place); REGISTER=1: all of ring's buffers
              # registered; then the cuda table's rules for both, staged and registered (not yet
              # timed; estimated ~400 s for NPS="2 4": give NPS=2 and NPS=4 a call each if short)
              # ("where they measure faster": tune, ring against twoshot, per size)
              nvidia-cuda-mps-control -d > /tmp/mps-halves.txt 2>&1; echo "== mps start rc=$?"
              for np in ${NPS:-2 4}; do for c in reduce_scatter allgather; do
                TAIL=20 step ${SWEEP_LIMIT:-150} $c-$np mpiexec -n $np python3 -m harness $c -b 8 -e ${MAX:-256M} -f 4 \
                  -a 64M,${MAX:-256M} -n ${ITERS:-20} -w 3 --device cuda \
                  --impl ring-flat,ring-twoshot,$([ -n "$REGISTER" ] || echo ring-twoshot+R,)nccl \
                  ${REGISTER:+-R} --json $OUT/$c-${np}ranks-twoshot-mps${REGISTER:+-registered}-$GPU.json
                for reg in ${TUNE_REG:-staged registered}; do
                  TAIL=14 step 200 tune-$c-$np-$reg mpiexec -n $np python3 -m harness tune --device cuda \
                    -b 8 -e ${TUNE_MAX:-64M} -f 4 --rounds 3 --algos ring,twoshot --collective $c \
                    $([ $reg = registered ] && echo -R) \
                    $([ -f $OUT/cuda-table.json ] && echo --merge $OUT/cuda-table.json) \
                    --out $OUT/cuda-table.json; done; done; done
              echo quit | nvidia-cuda-mps-control ;;
  pick)       # a few chosen checks when a session has minutes for little else: the tests named in
              # PICK (files or node ids), narrowed by PICK_K, under MPS (processes sharing the GPU)
              nvidia-cuda-mps-control -d > /tmp/mps-pick.txt 2>&1; echo "== mps start rc=$?"
              TAIL=30 step ${PICK_LIMIT:-400} pick python3 -m pytest ${PICK:-tests/test_group.py} -v -p no:cacheprovider \
                  --durations=20 ${PICK_K:+-k "$PICK_K"}
              echo quit | nvidia-cuda-mps-control ;;
  all)        step 580 all python3 -m pytest tests -x -q -p no:cacheprovider ;;
  ncclpart)   step 60 ncclpart python3 tools/nccl_wheel.py keep --from .nccl --to /tmp/nccl-parts ;;
  nccl)       step 120 nccl python3 tools/nccl_wheel.py install --parts /tmp/nccl-parts --target /tmp/nccl230
              [ -f /tmp/nccl230/nvidia/nccl/lib/libnccl.so.2 ] && \
                  export RING_NCCL_LIB=/tmp/nccl230/nvidia/nccl/lib/libnccl.so.2 ;;
  ncclcmp)    # issue 52's comparison: the ring beside NCCL >= 2.30 with several ranks on the GPU
              # (its own P2P transport, no --nccl-hostid) and MPI, under MPS, 8 B - 256 MiB;
              # ring's calls stream-ordered (BLOCKING=1: blocking), the one-shot and two-shot kernels
              # beside it; REGISTER=1: ring's buffers registered (-R: the two-shot in place)
              nvidia-cuda-mps-control -d > /tmp/mps-nccl.txt 2>&1; echo "== mps start rc=$?"
              for np in ${NPS:-2 4}; do
                TAIL=30 step ${SWEEP_LIMIT:-200} ncclcmp-$np mpiexec -n $np python3 -m harness allreduce -b 8 -e ${MAX:-256M} -f 4 \
                  -a 64M,${MAX:-256M} -n ${ITERS:-20} -w 3 --device cuda --impl ${IMPL:-ring,ring-flat,ring-oneshot,ring-twoshot,nccl,mpi} \
                  ${BLOCKING:+--blocking} ${REGISTER:+-R} \
                  --json $OUT/allreduce-${np}ranks-nccl230-mps${BLOCKING:+-blocking}${REGISTER:+-registered}-$GPU.json; done
              # issues 52 and 53's acceptance points, figure by figure
              TAIL=20 step 30 acceptance python3 tools/acceptance.py \
                  $OUT/allreduce-*ranks-nccl230-mps${BLOCKING:+-blocking}${REGISTER:+-registered}-$GPU.json
              echo quit | nvidia-cuda-mps-control ;;
esac; done
echo; echo "== summary (step, exit status, seconds, first result line)"; printf '%s' "$SUMMARY"
