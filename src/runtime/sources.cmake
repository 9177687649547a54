target_sources(parax PRIVATE
  runtime/buffer.cpp
  runtime/collectives.cpp
  runtime/eager.cpp
  runtime/executor.cpp
  runtime/loaded_plan.cpp
  runtime/reduce.cpp
  runtime/transfer.cpp)

# The engines between processes (engine.h): Gloo over TCP with its rendezvous stores
# (ZeroMQ for host:port, Redis through hiredis, files), and Open MPI. Private, like every
# dependency: programs using parax see none of them.
target_sources(parax PRIVATE
  runtime/distributed.cpp
  runtime/gloo_engine.cpp
  runtime/mpi_engine.cpp
  runtime/zmq_store.cpp)
find_package(Gloo CONFIG REQUIRED)
# MPI's C API through the C++ compiler (the project enables no C), without the deprecated
# C++ bindings.
set(MPI_CXX_SKIP_MPICXX TRUE)
find_package(MPI REQUIRED COMPONENTS CXX)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
# Gloo's redis_store.h includes <hiredis.h>, which Debian installs as <hiredis/hiredis.h>.
target_compile_definitions(parax PRIVATE HIREDIS_NESTED_INCLUDE)
target_link_libraries(parax PRIVATE gloo MPI::MPI_CXX PkgConfig::ZMQ PkgConfig::HIREDIS)
