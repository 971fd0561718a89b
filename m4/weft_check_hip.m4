# WEFT_CHECK_HIP: the hip GPU backend (optional). --with-rocm is an alias.
AC_DEFUN([WEFT_CHECK_HIP], [
  AC_ARG_WITH([hip],
    [AS_HELP_STRING([--with-hip@<:@=DIR@:>@], [build the hip backend (default: auto, DIR=/opt/rocm or /usr)])],
    [], [with_hip=auto])
  AC_ARG_WITH([rocm],
    [AS_HELP_STRING([--with-rocm@<:@=DIR@:>@], [alias of --with-hip])],
    [with_hip=$withval], [])
  AC_ARG_WITH([hip-arch],
    [AS_HELP_STRING([--with-hip-arch=LIST],
      [GPU targets, comma- or space-separated (default: gfx90a (MI200) and gfx942 (MI300), each where hipcc supports it)])],
    [WEFT_HIP_ARCH=$withval; weft_hip_arch_given=yes], [WEFT_HIP_ARCH="gfx90a gfx942"; weft_hip_arch_given=])
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
     dnl One --offload-arch per target this hipcc accepts; a default target
     dnl it refuses is dropped with a notice, a requested one is an error.
     WEFT_HIP_ARCH_FLAGS=
     AS_IF([test -n "$weft_have_hip"],
       [echo 'int weft_arch_probe;' >conftest.hip
        for weft_arch in `echo "$WEFT_HIP_ARCH" | tr ',' ' '`; do
          AC_MSG_CHECKING([whether $HIPCC compiles for $weft_arch])
          AS_IF([$HIPCC -x hip --offload-arch=$weft_arch -c conftest.hip -o conftest.$OBJEXT >/dev/null 2>&1],
            [AC_MSG_RESULT([yes]); WEFT_HIP_ARCH_FLAGS="$WEFT_HIP_ARCH_FLAGS --offload-arch=$weft_arch"],
            [AC_MSG_RESULT([no])
             AS_IF([test "x$weft_hip_arch_given" = xyes],
               [AC_MSG_ERROR([--with-hip-arch: $HIPCC cannot compile for $weft_arch])],
               [AC_MSG_NOTICE([$weft_arch left out: $HIPCC does not know it])])])
        done
        rm -f conftest.hip conftest.$OBJEXT
        AS_IF([test -z "$WEFT_HIP_ARCH_FLAGS"], [weft_have_hip=])])
     CPPFLAGS=$weft_save_CPPFLAGS; LDFLAGS=$weft_save_LDFLAGS; LIBS=$weft_save_LIBS
     AS_IF([test -z "$weft_have_hip" && test "x$with_hip" != xauto],
       [AC_MSG_ERROR([--with-hip was given but HIP (hipcc for a known target, hip/hip_runtime_api.h, libamdhip64) was not found under $weft_hip_dir])])])
  AS_IF([test "x$weft_have_hip" = xyes],
    [WEFT_HIP_LIBS="-lamdhip64"
     AC_DEFINE([WEFT_HAVE_HIP], [1], [the hip backend is built])],
    [WEFT_HIP_CPPFLAGS=; WEFT_HIP_LDFLAGS=])
  AC_SUBST([WEFT_HIP_CPPFLAGS]) AC_SUBST([WEFT_HIP_LDFLAGS]) AC_SUBST([WEFT_HIP_LIBS])
  AC_SUBST([WEFT_HIP_ARCH]) AC_SUBST([WEFT_HIP_ARCH_FLAGS]) AC_SUBST([HIPCC])
  AM_CONDITIONAL([HAVE_HIP], [test "x$weft_have_hip" = xyes])
])
