# WEFT_CHECK_HIP: the hip GPU backend (optional). --with-rocm is an alias.
AC_DEFUN([WEFT_CHECK_HIP], [
  AC_ARG_WITH([hip],
    [AS_HELP_STRING([--with-hip@<:@=DIR@:>@], [build the hip backend (default: auto, DIR=/opt/rocm or /usr)])],
    [], [with_hip=auto])
  AC_ARG_WITH([rocm],
    [AS_HELP_STRING([--with-rocm@<:@=DIR@:>@], [alias of --with-hip])],
    [with_hip=$withval], [])
  AC_ARG_WITH([hip-arch],
    [AS_HELP_STRING([--with-hip-arch=LIST], [--offload-arch list (default: gfx90a)])],
    [WEFT_HIP_ARCH=$withval], [WEFT_HIP_ARCH=gfx90a])
  weft_have_hip=
  AS_IF([test "x$with_hip" != xno],
    [weft_save_CPPFLAGS=$CPPFLAGS; weft_save_LDFLAGS=$LDFLAGS; weft_save_LIBS=$LIBS
     AS_CASE([$with_hip],
       [yes|auto], [AS_IF([test -d /opt/rocm], [weft_hip_dir=/opt/rocm], [weft_hip_dir=/usr])],
       [weft_hip_dir=$with_hip])
     AS_IF([test "x$weft_hip_dir" != x/usr],
       [WEFT_HIP_CPPFLAGS="-I$weft_hip_dir/include"; WEFT_HIP_LDFLAGS="-L$weft_hip_dir/lib"])
     WEFT_HIP_CPPFLAGS="$WEFT_HIP_CPPFLAGS -D__HIP_PLATFORM_AMD__"
     CPPFLAGS="$CPPFLAGS $WEFT_HIP_CPPFLAGS"; LDFLAGS="$LDFLAGS $WEFT_HIP_LDFLAGS"
     AC_PATH_PROG([HIPCC], [hipcc], [], [$weft_hip_dir/bin:$PATH])
     AC_CHECK_HEADER([hip/hip_runtime_api.h],
       [AC_CHECK_LIB([amdhip64], [hipGetDeviceCount], [weft_have_hip=yes])])
     AS_IF([test -z "$HIPCC"], [weft_have_hip=])
     CPPFLAGS=$weft_save_CPPFLAGS; LDFLAGS=$weft_save_LDFLAGS; LIBS=$weft_save_LIBS
     AS_IF([test -z "$weft_have_hip" && test "x$with_hip" != xauto],
       [AC_MSG_ERROR([--with-hip was given but HIP (hipcc, hip/hip_runtime_api.h, libamdhip64) was not found under $weft_hip_dir])])])
  AS_IF([test "x$weft_have_hip" = xyes],
    [WEFT_HIP_LIBS="-lamdhip64"
     AC_DEFINE([WEFT_HAVE_HIP], [1], [the hip backend is built])],
    [WEFT_HIP_CPPFLAGS=; WEFT_HIP_LDFLAGS=])
  AC_SUBST([WEFT_HIP_CPPFLAGS]) AC_SUBST([WEFT_HIP_LDFLAGS]) AC_SUBST([WEFT_HIP_LIBS])
  AC_SUBST([WEFT_HIP_ARCH]) AC_SUBST([HIPCC])
  AM_CONDITIONAL([HAVE_HIP], [test "x$weft_have_hip" = xyes])
])
