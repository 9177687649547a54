# Checkpoints: pytrees saved as Orbax's zarr v3 layout (with zstd from libzstd, CRC-32C
# from ISA-L and JSON metadata through nlohmann-json, all private) and safetensors files.
find_package(zstd REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
target_link_libraries(parax PRIVATE zstd::libzstd_shared nlohmann_json::nlohmann_json
  PkgConfig::ISAL)
target_sources(parax PRIVATE
  checkpointing/crc32c.cpp
  checkpointing/files.cpp
  checkpointing/manager.cpp
  checkpointing/pytree.cpp
  checkpointing/safetensors.cpp
  checkpointing/zarr.cpp)
