"""The soft-RoCE test VM: Linux's own RoCEv2 stack (``rdma_rxe``) under QEMU, for tests.

* :mod:`.image` - kernel + initramfs from Debian packages, cached in ``.cache/softroce``.
* :mod:`.vm` - one VM run: QEMU (TCG), the host's root shared read-only, an exchange
  folder, and a raw-frame link to the VM's NIC over Unix datagram sockets.
* :mod:`.sink` - ``rxe_sink`` (``rxe_sink.c``), a UC QP + memory region receiving RDMA
  WRITEs in the VM, and its result files.

See README.md beside this file; ``python -m verification.softroce`` runs commands in a VM.
"""
