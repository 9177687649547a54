// The parax_torch library: copies between LibTorch tensors and parax Arrays through host
// memory (LibTorch's CPU tensors are host buffers), and torch's state_dict naming.
#include "parax/torch.h"

#include <cstring>

#include "parax/device_put.h"
#include "parax/errors.h"
#include "parax/numpy.h"

namespace parax {

namespace {

::torch::ScalarType torch_type(DType t) {
  switch (t) {
    case DType::float32:
      return ::torch::kFloat32;
    case DType::float64:
      return ::torch::kFloat64;
    case DType::float16:
      return ::torch::kFloat16;
    case DType::bfloat16:
      return ::torch::kBFloat16;
    case DType::int8:
      return ::torch::kInt8;
    case DType::int16:
      return ::torch::kInt16;
    case DType::int32:
      return ::torch::kInt32;
    case DType::int64:
      return ::torch::kInt64;
    case DType::uint8:
      return ::torch::kUInt8;
    case DType::bool_:
      return ::torch::kBool;
    default:
      throw TypeError("[to_torch] torch has no dtype for " + std::string(dtype_name(t)));
  }
}

DType parax_type(::torch::ScalarType t) {
  switch (t) {
    case ::torch::kFloat32:
      return DType::float32;
    case ::torch::kFloat64:
      return DType::float64;
    case ::torch::kFloat16:
      return DType::float16;
    case ::torch::kBFloat16:
      return DType::bfloat16;
    case ::torch::kInt8:
      return DType::int8;
    case ::torch::kInt16:
      return DType::int16;
    case ::torch::kInt32:
      return DType::int32;
    case ::torch::kInt64:
      return DType::int64;
    case ::torch::kUInt8:
      return DType::uint8;
    case ::torch::kBool:
      return DType::bool_;
    default:
      throw TypeError(std::string("[from_torch] parax has no dtype for torch's ") +
                      c10::toString(t));
  }
}

// Copies x's values (as T, x's own dtype) into the tensor's buffer.
template <class T>
void fill(const Array& x, ::torch::Tensor& t) {
  std::vector<T> v = x.to_vector<T>();
  if constexpr (std::is_same_v<T, bool>) {
    bool* out = static_cast<bool*>(t.data_ptr());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  } else {
    std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(T));
  }
}

void collect(const ::torch::nn::Module& m, const std::string& prefix, nn::StateDict& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) {
    if (p.value().defined()) out.insert_or_assign(prefix + p.key(), from_torch(p.value()));
  }
  for (const auto& b : m.named_buffers(/*recurse=*/false)) {
    if (b.value().defined()) out.insert_or_assign(prefix + b.key(), from_torch(b.value()));
  }
  for (const auto& c : m.named_children()) collect(*c.value(), prefix + c.key() + ".", out);
}

}  // namespace

::torch::Tensor to_torch(const Array& x) {
  std::vector<int64_t> sizes(x.shape().begin(), x.shape().end());
  ::torch::Tensor t = ::torch::empty(sizes, ::torch::TensorOptions().dtype(torch_type(x.dtype())));
  if (x.size() == 0) return t;
  switch (x.dtype()) {
    case DType::float32:
      fill<float>(x, t);
      break;
    case DType::float64:
      fill<double>(x, t);
      break;
    case DType::float16:
      fill<float16_t>(x, t);
      break;
    case DType::bfloat16:
      fill<bfloat16_t>(x, t);
      break;
    case DType::int8:
      fill<int8_t>(x, t);
      break;
    case DType::int16:
      fill<int16_t>(x, t);
      break;
    case DType::int32:
      fill<int32_t>(x, t);
      break;
    case DType::int64:
      fill<int64_t>(x, t);
      break;
    case DType::uint8:
      fill<uint8_t>(x, t);
      break;
    default:
      fill<bool>(x, t);
      break;
  }
  return t;
}

Array from_torch(const ::torch::Tensor& tensor, const std::optional<Sharding>& sharding) {
  ::torch::Tensor t = tensor.detach().to(::torch::kCPU).contiguous();
  const DType src = parax_type(t.scalar_type());
  Shape shape(t.sizes().begin(), t.sizes().end());
  Array a = numpy::detail::array_from_values(t.data_ptr(), t.numel(), src, shape, std::nullopt);
  return sharding ? device_put(a, *sharding) : a;
}

nn::StateDict import_parameters(const ::torch::nn::Module& module) {
  nn::StateDict out;
  collect(module, "", out);
  return out;
}

void export_parameters(const nn::StateDict& params, ::torch::nn::Module& module) {
  ::torch::NoGradGuard no_grad;
  auto copy = [&](const std::string& name, ::torch::Tensor& dst) {
    if (!params.contains(name)) {
      throw ValueError("[export_parameters] no array for torch parameter '" + name + "'");
    }
    const Array& a = params.at(name);
    Shape want(dst.sizes().begin(), dst.sizes().end());
    if (a.shape() != want) {
      throw ValueError("[export_parameters] size mismatch for " + name + ": the array has shape " +
                       shape_str(a.shape()) + ", the torch parameter " + shape_str(want));
    }
    dst.copy_(to_torch(a));
  };
  for (auto& p : module.named_parameters(/*recurse=*/true)) copy(p.key(), p.value());
  for (auto& b : module.named_buffers(/*recurse=*/true)) copy(b.key(), b.value());
}

}  // namespace parax
