# WEFT_CHECK_CUDA: the cuda GPU backend (optional).
# Publishes WEFT_CUDA_CPPFLAGS, WEFT_CUDA_LDFLAGS, WEFT_CUDA_LIBS, NVCC,
# WEFT_CUDA_ARCH_FLAGS and the HAVE_CUDA conditional.
AC_DEFUN([WEFT_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [build the cuda backend (default: auto, DIR=/usr/local/cuda)])],
    [], [with_cuda=auto])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=FLAGS], [nvcc -gencode flags (default: sm_90 plus compute_90 PTX)])],
    [WEFT_CUDA_ARCH_FLAGS=$withval],
    [WEFT_CUDA_ARCH_FLAGS="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"])
  weft_have_cuda=
  AS_IF([test "x$with_cuda" != xno],
    [AS_CASE([$with_cuda], [yes|auto], [weft_cuda_dir=/usr/local/cuda], [weft_cuda_dir=$with_cuda])
     WEFT_CUDA_CPPFLAGS="-I$weft_cuda_dir/include"
     WEFT_CUDA_LDFLAGS="-L$weft_cuda_dir/lib64 -Wl,-rpath,$weft_cuda_dir/lib64"
     weft_save_CPPFLAGS=$CPPFLAGS; weft_save_LDFLAGS=$LDFLAGS; weft_save_LIBS=$LIBS
     CPPFLAGS="$CPPFLAGS $WEFT_CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $WEFT_CUDA_LDFLAGS"
     AC_PATH_PROG([NVCC], [nvcc], [], [$weft_cuda_dir/bin:$PATH])
     AC_CHECK_HEADER([cuda_runtime_api.h],
       [AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [weft_have_cuda=yes])])
     AS_IF([test -z "$NVCC"], [weft_have_cuda=])
     CPPFLAGS=$weft_save_CPPFLAGS; LDFLAGS=$weft_save_LDFLAGS; LIBS=$weft_save_LIBS
     AS_IF([test -z "$weft_have_cuda" && test "x$with_cuda" != xauto],
       [AC_MSG_ERROR([--with-cuda was given but the CUDA toolkit (nvcc, cuda_runtime_api.h, libcudart) was not found under $weft_cuda_dir])])])
  AS_IF([test "x$weft_have_cuda" = xyes],
    [WEFT_CUDA_LIBS="-lcudart -lstdc++"
     AC_DEFINE([WEFT_HAVE_CUDA], [1], [the cuda backend is built])],
    [WEFT_CUDA_CPPFLAGS=; WEFT_CUDA_LDFLAGS=])
  AC_SUBST([WEFT_CUDA_CPPFLAGS]) AC_SUBST([WEFT_CUDA_LDFLAGS]) AC_SUBST([WEFT_CUDA_LIBS])
  AC_SUBST([WEFT_CUDA_ARCH_FLAGS]) AC_SUBST([NVCC])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$weft_have_cuda" = xyes])
])
