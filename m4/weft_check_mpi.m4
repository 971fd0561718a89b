# WEFT_CHECK_MPI: MPI for weft-perf --vs mpi and MPI launch (optional).
AC_DEFUN([WEFT_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi], [build MPI support into the tools (default: auto)])],
    [], [with_mpi=auto])
  weft_have_mpi=
  AS_IF([test "x$with_mpi" != xno],
    [PKG_CHECK_MODULES([WEFT_MPI], [ompi-c], [weft_have_mpi=yes],
      [PKG_CHECK_MODULES([WEFT_MPI], [mpich], [weft_have_mpi=yes],
        [AS_IF([test "x$with_mpi" != xauto],
          [AC_MSG_ERROR([--with-mpi was given but no MPI (ompi-c or mpich pkg-config module) was found])])])])])
  AS_IF([test "x$weft_have_mpi" = xyes], [AC_DEFINE([WEFT_HAVE_MPI], [1], [MPI is available to the tools])])
  AM_CONDITIONAL([HAVE_MPI], [test "x$weft_have_mpi" = xyes])
])
