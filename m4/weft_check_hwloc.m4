# WEFT_CHECK_HWLOC: topology discovery (optional).
AC_DEFUN([WEFT_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc], [use hwloc for topology (default: auto)])],
    [], [with_hwloc=auto])
  weft_have_hwloc=
  AS_IF([test "x$with_hwloc" != xno],
    [PKG_CHECK_MODULES([WEFT_HWLOC], [hwloc >= 2.0], [weft_have_hwloc=yes],
      [AS_IF([test "x$with_hwloc" != xauto],
        [AC_MSG_ERROR([--with-hwloc was given but hwloc >= 2.0 was not found (Debian: libhwloc-dev)])])])])
  AS_IF([test "x$weft_have_hwloc" = xyes], [AC_DEFINE([WEFT_HAVE_HWLOC], [1], [hwloc is available])])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$weft_have_hwloc" = xyes])
])
