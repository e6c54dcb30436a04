"""The seccomp filter the policy's process loads before its module is imported.

Built with libseccomp (through ``pyseccomp``), which knows each architecture's system-call
numbers and argument layout. Everything is allowed except:

- new processes: ``fork``, ``vfork`` and ``clone`` without ``CLONE_THREAD`` fail with
  ``EAGAIN`` (threads stay allowed: torch and OpenMP use them); ``clone3``, whose flags
  live in memory a filter cannot read, fails with ``ENOSYS``, and the C library then falls
  back to ``clone``;
- other processes: ``ptrace``, ``process_vm_readv`` / ``process_vm_writev`` fail with ``EPERM``;
- memory ``RLIMIT_DATA`` does not count: shared anonymous mappings
  (``mmap(MAP_SHARED | MAP_ANONYMOUS)``), ``memfd_create`` and SysV ``shmget`` fail with
  ``ENOMEM``.

Loading it sets ``no_new_privs``, so nothing the process executes can gain privileges.
"""

from __future__ import annotations

import errno

CLONE_THREAD = 0x00010000
MAP_SHARED = 0x01  # MAP_SHARED_VALIDATE (0x03) has this bit too
MAP_ANONYMOUS = 0x20


def build_filter():
    """The filter (a ``pyseccomp.SyscallFilter``, not loaded). ImportError without pyseccomp,
    RuntimeError or OSError without a usable libseccomp."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    for call in ("fork", "vfork"):
        f.add_rule(sc.ERRNO(errno.EAGAIN), call)
    f.add_rule(sc.ERRNO(errno.EAGAIN), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for call in ("ptrace", "process_vm_readv", "process_vm_writev"):
        f.add_rule(sc.ERRNO(errno.EPERM), call)
    shared_anon = MAP_SHARED | MAP_ANONYMOUS
    f.add_rule(sc.ERRNO(errno.ENOMEM), "mmap", sc.Arg(3, sc.MASKED_EQ, shared_anon, shared_anon))
    for call in ("memfd_create", "shmget"):
        f.add_rule(sc.ERRNO(errno.ENOMEM), call)
    return f


def load_filter() -> None:
    """Install the filter on this process (and every thread it starts afterwards)."""
    build_filter().load()
