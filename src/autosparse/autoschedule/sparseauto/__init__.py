"""SparseAuto (Dias et al., OOPSLA 2024): branched iteration graphs enumerated by recursive fission and
fusion, costed symbolically in time and memory, pruned by depth and by Z3, then chosen on the inputs."""
