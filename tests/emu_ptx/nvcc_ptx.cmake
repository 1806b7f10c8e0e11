# tests/emu_ptx/nvcc_ptx.cmake - cmake -P script: nvcc -ptx one .cu for one arch, tolerating a
# program that does not compile for that arch (it may need a newer one).
#
#   cmake -DNVCC=<nvcc> -DSRC=<file.cu> -DOUT=<file.ptx> -DARCH=<75> [-DRDC=ON] -P nvcc_ptx.cmake
#
# On success OUT holds the PTX. On failure OUT is empty and OUT.failed holds nvcc's message; the
# test (cuda_programs_test.cc) requires every program to compile for at least one arch.
set(flags -arch=compute_${ARCH} -ptx)
if(RDC)
  list(PREPEND flags -rdc=true)
endif()
file(REMOVE ${OUT}.failed)
execute_process(COMMAND ${NVCC} ${flags} ${SRC} -o ${OUT}
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  file(WRITE ${OUT} "")
  file(WRITE ${OUT}.failed "nvcc ${flags} ${SRC}: exit ${rc}\n${out}${err}")
endif()
