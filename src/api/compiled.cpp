// jit's ahead-of-time path: ShapeDtypeStruct, and jit(f).lower(args).compile(), the front
// end's door to the compiler. Tracing and lowering are transforms' (transforms/jit.cpp);
// compiling is the compiler's, which the transforms layer sits below, so the step that
// joins them lives here, over both. Compiled holds the compiler's plan and prints it;
// nothing here runs.
#include "api/array_impl.h"
#include "compiler/compile.h"
#include "sharding/sharding_impl.h"
#include "transforms/lowered.h"

namespace parax {
namespace {

std::shared_ptr<detail::ArrayImpl> abstract_impl(Shape shape, DType dtype,
                                                 const std::optional<Sharding>& sharding) {
  for (int64_t d : shape) {
    if (d >= 0) continue;
    throw ValueError("ShapeDtypeStruct: negative dimension in shape " + shape_str(shape));
  }
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = core::Aval{std::move(shape), dtype, false};
  impl->abstract = true;
  if (sharding) {
    const std::optional<Sharding> s = detail::try_resolve_spec(*sharding);
    if (!s) {
      throw RuntimeError("ShapeDtypeStruct: the bare " + sharding->to_string() +
                         " needs an "
                         "enclosing parax::sharding::use_mesh scope");
    }
    (void)s->shard_shape(impl->aval.shape);  // JAX's error for a sharding that does not fit
    impl->sharding = *s;
    impl->committed = true;
  }
  return impl;
}

}  // namespace

ShapeDtypeStruct::ShapeDtypeStruct(Shape shape, DType dtype, std::optional<Sharding> sharding)
    : Array(abstract_impl(std::move(shape), dtype, sharding)) {}

std::string Compiled::as_text() const { return plan_->as_text(); }
CostAnalysis Compiled::cost_analysis() const { return plan_->cost; }
std::vector<Sharding> Compiled::input_shardings() const { return plan_->in_shardings; }
std::vector<Sharding> Compiled::output_shardings() const { return plan_->out_shardings; }

Compiled Lowered::compile() const {
  std::vector<compiler::ArgInfo> infos;
  auto add = [&](const Array& x) {
    // A ShapeDtypeStruct gives its type and sharding, which is all compiling needs.
    const detail::ArrayImpl& impl = detail::impl_of(x);
    if (!impl.abstract) detail::concrete_of(x, "Lowered::compile");
    infos.push_back({impl.aval, impl.sharding, impl.committed});
  };
  for (const Array& c : impl_->closed.consts) add(c);
  for (size_t i = 0; i < impl_->args.size(); ++i) {
    add(impl_->args[i]);
    infos.back().donated = i < impl_->donated.size() && impl_->donated[i];
  }
  compiler::CompileOptions opts;
  opts.name = impl_->name;
  return Compiled(compiler::compile(impl_->lifted, infos, opts));
}

}  // namespace parax
