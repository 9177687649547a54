// Exceptions raised by parax. Kinds follow JAX's (ValueError, TypeError, ...), so a JAX
// user recognises them; every one derives from parax::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace parax {

// Base of every exception parax raises for bad input or a failed operation.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class ValueError : public Error {
  using Error::Error;
};
class TypeError : public Error {
  using Error::Error;
};
class IndexError : public Error {
  using Error::Error;
};
// JAX's NameError: an axis name that no enclosing transform binds.
class NameError : public Error {
  using Error::Error;
};
class ShardingError : public ValueError {
  using ValueError::ValueError;
};
// A traced value used where a concrete one is needed (item(), to_vector() in jit).
class ConcretizationError : public TypeError {
  using TypeError::TypeError;
};
class NotImplementedError : public Error {
  using Error::Error;
};
// A runtime failure outside the user's control of inputs (JAX's RuntimeError).
class RuntimeError : public Error {
  using Error::Error;
};
class DistributedError : public RuntimeError {
  using RuntimeError::RuntimeError;
};
// Memory ran out (JAX's RESOURCE_EXHAUSTED): the message names the bytes requested.
class ResourceExhaustedError : public RuntimeError {
  using RuntimeError::RuntimeError;
};

}  // namespace parax
