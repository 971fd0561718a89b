# WEFT_CHECK_VERBS: InfiniBand / RoCE verbs network backend (optional).
AC_DEFUN([WEFT_CHECK_VERBS], [
  AC_ARG_WITH([verbs],
    [AS_HELP_STRING([--with-verbs@<:@=DIR@:>@], [build the ib (verbs) network backend (default: auto)])],
    [], [with_verbs=auto])
  weft_have_verbs=
  AS_IF([test "x$with_verbs" != xno],
    [weft_save_CPPFLAGS=$CPPFLAGS; weft_save_LDFLAGS=$LDFLAGS; weft_save_LIBS=$LIBS
     AS_CASE([$with_verbs], [yes|auto], [],
       [WEFT_VERBS_CPPFLAGS="-I$with_verbs/include"; WEFT_VERBS_LDFLAGS="-L$with_verbs/lib"])
     CPPFLAGS="$CPPFLAGS $WEFT_VERBS_CPPFLAGS"; LDFLAGS="$LDFLAGS $WEFT_VERBS_LDFLAGS"
     AC_CHECK_HEADER([infiniband/verbs.h],
       [AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [weft_have_verbs=yes])])
     CPPFLAGS=$weft_save_CPPFLAGS; LDFLAGS=$weft_save_LDFLAGS; LIBS=$weft_save_LIBS
     AS_IF([test -z "$weft_have_verbs" && test "x$with_verbs" != xauto],
       [AC_MSG_ERROR([--with-verbs was given but libibverbs was not found (Debian: libibverbs-dev)])])])
  AS_IF([test "x$weft_have_verbs" = xyes],
    [WEFT_VERBS_LIBS="-libverbs"
     AC_DEFINE([WEFT_HAVE_VERBS], [1], [the ib network backend is built])])
  AC_SUBST([WEFT_VERBS_CPPFLAGS]) AC_SUBST([WEFT_VERBS_LDFLAGS]) AC_SUBST([WEFT_VERBS_LIBS])
  AM_CONDITIONAL([HAVE_VERBS], [test "x$weft_have_verbs" = xyes])
])
