# (filled by the compiler issue)
