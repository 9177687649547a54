// The multi-process conformance cases: the tutorial's sharding examples, dots
// over every layout, with_sharding_constraint, the MLP's data- and tensor-parallel
// gradient steps, the pmap tutorial's training step, shard_map with every collective and
// random draws into sharded outputs. Run as one process of 8 devices or as several
// processes (parax-run, mpirun), it prints one line per distinct shard it holds (its place
// in the global array and a hash of its bytes), each result's sharding, and each
// visualization with device ids replaced by their place in parax::devices(). The driver
// (multiprocess_test.cpp) compares the union of every process's lines with the
// one-process run: equal sets mean bit-identical results.
#include <parax/parax.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/mlp.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
namespace lax = parax::lax;
using px::Array;
using px::None;
using px::P;

namespace {

std::set<std::string> lines;

template <class T>
uint64_t hash_of(const Array& x) {
  const std::vector<T> v = x.to_vector<T>();
  uint64_t h = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

uint64_t hash_any(const Array& x) {
  switch (x.dtype()) {
    case px::DType::float32:
      return hash_of<float>(x);
    case px::DType::int32:
      return hash_of<int32_t>(x);
    case px::DType::uint32:
      return hash_of<uint32_t>(x);
    default:
      std::cerr << "mp_cases: no hash for " << px::dtype_name(x.dtype()) << "\n";
      std::exit(3);
  }
}

std::string box_str(const px::Index& index, const px::Shape& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    s += (d ? "," : "") + std::to_string(index[d].begin(shape[d])) + ":" +
         std::to_string(index[d].end(shape[d]));
  }
  return s + "]";
}

// Device ids as places in devices(): 2048 is the 5th device of a 2x4 run, as 4 is of 1x8.
std::string ordinals(std::string text) {
  const std::vector<px::Device> all = px::devices();
  std::string out;
  auto place_of = [&](int id) {
    size_t place = 0;
    while (place < all.size() && all[place].id() != id) ++place;
    return std::to_string(place);
  };
  std::regex ids("CPU ([0-9]+(,[0-9]+)*)");
  std::smatch m;
  while (std::regex_search(text, m, ids)) {
    out += m.prefix().str() + "CPU#";
    std::stringstream list(m[1].str());
    std::string id;
    for (bool first = true; std::getline(list, id, ','); first = false) {
      out += (first ? "" : ",") + place_of(std::stoi(id));
    }
    text = m.suffix().str();
  }
  out += text;
  // Box widths follow the widest label, so only the cells' order and labels are compared.
  std::string flat;
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c == ' ') continue;
    if (c == '\n') {
      flat += '/';
      continue;
    }
    // The horizontal rule U+2500 (E2 94 80) repeats with the width.
    if (c == 0xE2 && i + 2 < out.size() && static_cast<unsigned char>(out[i + 1]) == 0x94 &&
        static_cast<unsigned char>(out[i + 2]) == 0x80) {
      i += 2;
      continue;
    }
    flat += out[i];
  }
  return flat;
}

void report(const std::string& name, const Array& x, bool with_sharding = true) {
  for (const px::Shard& s : x.addressable_shards()) {
    lines.insert(name + " shard " + box_str(s.index, x.shape()) + " " +
                 std::string(px::dtype_name(x.dtype())) + " " + std::to_string(hash_any(s.data)));
  }
  if (with_sharding) lines.insert(name + " sharding " + x.sharding().to_string());
}

void visualize(const std::string& name, const Array& x) {
  std::ostringstream os;
  px::debug::visualize_array_sharding(x, os);
  lines.insert(name + " viz " + ordinals(os.str()));
}

Array values(px::Shape shape, float scale) {
  return jnp::sin(jnp::arange(px::shape_size(shape), px::DType::float32).reshape(shape) * scale);
}

void sharding_examples(const px::Mesh& mesh) {
  const Array x = values({64, 32}, 0.01f);
  const std::vector<std::pair<std::string, P>> specs = {
      {"xy", P("x", "y")}, {"yx", P("y", "x")}, {"x", P("x")}, {"_y", P(None, "y")}, {"rep", P()}};
  auto sin_jit = px::jit([](const Array& a) { return jnp::sin(a); });
  for (const auto& [name, spec] : specs) {
    const Array xs = px::device_put(x, px::NamedSharding(mesh, spec));
    report("put." + name, xs);
    visualize("put." + name, xs);
    report("sin.jit." + name, sin_jit(xs));
    report("sin.eager." + name, jnp::sin(xs) * 2.0f + 1.0f);
    // Global to global: regions move between processes.
    for (const auto& [to_name, to] : specs) {
      report("reshard." + name + "." + to_name, px::device_put(xs, px::NamedSharding(mesh, to)));
    }
    for (size_t d : {size_t(0), size_t(5)}) {
      report("to_device" + std::to_string(d) + "." + name, px::device_put(xs, px::devices()[d]),
             false);
    }
  }
}

void dots(const std::string& tag, const px::Mesh& mesh) {
  const Array a = values({32, 48}, 0.003f), b = values({48, 16}, 0.007f);
  const std::vector<std::pair<std::string, P>> a_specs = {{"xy", P("x", "y")},
                                                          {"x_", P("x", None)},
                                                          {"_x", P(None, "x")},
                                                          {"y_", P("y", None)},
                                                          {"rep", P()}};
  const std::vector<std::pair<std::string, P>> b_specs = {{"xy", P("x", "y")},
                                                          {"y_", P("y", None)},
                                                          {"_y", P(None, "y")},
                                                          {"x_", P("x", None)},
                                                          {"rep", P()}};
  auto dot_jit = px::jit([](const Array& l, const Array& r) { return jnp::dot(l, r); });
  for (const auto& [an, as] : a_specs) {
    const Array al = px::device_put(a, px::NamedSharding(mesh, as));
    for (const auto& [bn, bs] : b_specs) {
      const Array br = px::device_put(b, px::NamedSharding(mesh, bs));
      report(tag + ".dot.eager." + an + "." + bn, jnp::dot(al, br));
      report(tag + ".dot.jit." + an + "." + bn, dot_jit(al, br));
    }
  }
}

void constraints(const px::Mesh& mesh) {
  const Array x = px::device_put(values({32, 32}, 0.02f), px::NamedSharding(mesh, P("x", "y")));
  auto f = px::jit([&](const Array& a) {
    Array y = px::lax::with_sharding_constraint(jnp::sin(a), px::NamedSharding(mesh, P("y", "x")));
    return y * 2.0f + jnp::cos(y);
  });
  auto g = px::jit([&](const Array& a) {
    Array y = jnp::dot(a, jnp::transpose(a));
    return px::lax::with_sharding_constraint(y, px::NamedSharding(mesh, P(None, "x")));
  });
  report("wsc.transpose", f(x));
  report("wsc.dot", g(x));
  visualize("wsc.dot", g(x));
}

using Params = px::test_support::MlpParams;
using Batch = px::test_support::MlpBatch;
using px::test_support::mlp_loss;

void mlp() {
  const std::vector<int64_t> sizes = {784, 64, 64, 64, 10};
  Params params;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    params.emplace_back(values({sizes[i], sizes[i + 1]}, 0.37f) * (1.0f / 28.0f),
                        values({sizes[i + 1]}, 0.11f) * 0.1f);
  }
  const Batch batch{values({128, 784}, 0.013f), values({128, 10}, 0.29f)};
  auto grad_step = px::jit(px::grad(mlp_loss));
  auto loss_jit = px::jit(mlp_loss);
  auto sgd = [](Params p, const Params& g) {
    for (size_t l = 0; l < p.size(); ++l) {
      p[l] = {p[l].first - 1e-3f * g[l].first, p[l].second - 1e-3f * g[l].second};
    }
    return p;
  };
  {
    const px::Mesh mesh = px::make_mesh({8}, {"batch"});
    Params p = px::device_put(params, px::NamedSharding(mesh, P()));
    const Batch b = px::device_put(batch, px::NamedSharding(mesh, P("batch")));
    for (int step = 0; step < 3; ++step) p = sgd(p, grad_step(p, b));
    for (size_t l = 0; l < p.size(); ++l) report("mlp.dp.W" + std::to_string(l), p[l].first);
    report("mlp.dp.loss", loss_jit(p, b));
  }
  {
    const px::Mesh mesh = px::make_mesh({4, 2}, {"batch", "model"});
    auto rep = px::NamedSharding(mesh, P());
    Params p{{px::device_put(params[0].first, rep), px::device_put(params[0].second, rep)},
             {px::device_put(params[1].first, px::NamedSharding(mesh, P(None, "model"))),
              px::device_put(params[1].second, px::NamedSharding(mesh, P("model")))},
             {px::device_put(params[2].first, px::NamedSharding(mesh, P("model", None))),
              px::device_put(params[2].second, rep)},
             {px::device_put(params[3].first, rep), px::device_put(params[3].second, rep)}};
    const Batch b = px::device_put(batch, px::NamedSharding(mesh, P("batch", None)));
    for (int step = 0; step < 3; ++step) p = sgd(p, grad_step(p, b));
    for (size_t l = 0; l < p.size(); ++l) report("mlp.tp.W" + std::to_string(l), p[l].first);
    visualize("mlp.tp.W1", p[1].first);
    report("mlp.tp.loss", loss_jit(p, b));
  }
}

}  // namespace

struct Linear {
  Array weight;
  Array bias;
};
PARAX_REGISTER_PYTREE(Linear, weight, bias)

namespace {

// The pmap tutorial's regression step: every process passes the rows of its own devices.
void pmap_training() {
  const int64_t local = px::local_device_count();
  int64_t first = 0;  // this process's first row: its first device's place in devices()
  while (px::devices()[size_t(first)] != px::local_devices()[0]) ++first;
  const Array data_x = jr::normal(jr::key(1), {128, 1});
  const Array data_y = data_x * 2.0f - 1.0f + 0.5f * jr::normal(jr::key(2), {128, 1});
  const int64_t n = px::device_count(), rows = 128 / n;
  auto mine = [&](const Array& a) {
    return a.reshape({n, rows, 1}).slice({px::Slice{first, first + local}});
  };
  Linear params{jnp::stack(std::vector<Array>(size_t(local), Array(jnp::array(0.3f)))),
                jnp::stack(std::vector<Array>(size_t(local), Array(jnp::array(-0.2f))))};
  auto update = [](const Linear& p, const Array& xs, const Array& ys) {
    auto loss_fn = [](const Linear& q, const Array& x, const Array& y) {
      return jnp::mean(jnp::square(q.weight * x + q.bias - y));
    };
    auto [loss, grads] = px::value_and_grad(loss_fn)(p, xs, ys);
    grads = lax::pmean(grads, "num_devices");
    Linear out{p.weight - grads.weight * 0.005f, p.bias - grads.bias * 0.005f};
    return std::make_pair(out, lax::psum(loss, "num_devices"));
  };
  auto pupdate = px::pmap(update, {.axis_name = "num_devices"});
  Array loss;
  for (int i = 0; i < 5; ++i) std::tie(params, loss) = pupdate(params, mine(data_x), mine(data_y));
  for (int64_t k = 0; k < local; ++k) {
    const std::string row = std::to_string(first + k);
    lines.insert("pmap.weight row " + row + " " + std::to_string(hash_any(params.weight[k])));
    lines.insert("pmap.loss row " + row + " " + std::to_string(hash_any(loss[k])));
  }
}

void shard_maps(const std::string& tag, const px::Mesh& mesh) {
  const Array x = px::device_put(values({32, 16}, 0.05f), px::NamedSharding(mesh, P("x", "y")));
  using Op = std::function<Array(const Array&, const lax::AxisNames&)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"psum", [](const Array& a, const lax::AxisNames& n) { return lax::psum(a, n); }},
      {"pmean", [](const Array& a, const lax::AxisNames& n) { return lax::pmean(a, n); }},
      {"pmax", [](const Array& a, const lax::AxisNames& n) { return lax::pmax(a, n); }},
      {"pmin", [](const Array& a, const lax::AxisNames& n) { return lax::pmin(a, n); }},
      {"all_gather",
       [](const Array& a, const lax::AxisNames& n) { return lax::all_gather(a, n, 0, true); }},
      {"all_gather_stacked",
       [](const Array& a, const lax::AxisNames& n) { return lax::all_gather(a, n, 1)[0]; }},
      {"psum_scatter",
       [](const Array& a, const lax::AxisNames& n) { return lax::psum_scatter(a, n, 0, true); }},
      {"all_to_all",
       [](const Array& a, const lax::AxisNames& n) { return lax::all_to_all(a, n, 0, 1, true); }},
      {"ppermute",
       [](const Array& a, const lax::AxisNames& n) {
         const int64_t size = lax::axis_size(n);
         std::vector<std::pair<int64_t, int64_t>> perm;
         for (int64_t i = 0; i < size; ++i) perm.push_back({i, (i + 1) % size});
         return lax::ppermute(a, n, perm);
       }},
      {"axis_index", [](const Array& a, const lax::AxisNames& n) {
         return a + lax::axis_index(n).astype(px::DType::float32);
       }}};
  const std::vector<std::pair<std::string, lax::AxisNames>> axes = {
      {"x", lax::AxisNames("x")}, {"y", lax::AxisNames("y")}, {"xy", lax::AxisNames({"x", "y"})}};
  for (const auto& [op_name, op] : ops) {
    for (const auto& [axes_name, names] : axes) {
      auto f = px::shard_map([op, names](const Array& a) { return op(a, names); }, mesh,
                             P("x", "y"), P("x", "y"), {.check_vma = false});
      report(tag + ".shard_map." + op_name + "." + axes_name, f(x));
    }
  }
}

// vmap and grad of a per-row function over a sharded batch, eager and under jit.
void vmaps(const px::Mesh& mesh) {
  const Array x = px::device_put(values({32, 16}, 0.03f), px::NamedSharding(mesh, P("x", "y")));
  const Array w = px::device_put(values({16, 8}, 0.05f), px::NamedSharding(mesh, P()));
  auto row = [](const Array& r, const Array& m) { return jnp::tanh(jnp::dot(r, m)); };
  auto per_row = px::vmap(row, {.in_axes = {0, px::None}});
  report("vmap.eager", per_row(x, w));
  report("vmap.jit", px::jit(per_row)(x, w));
  auto row_loss = [&](const Array& m, const Array& xs) { return jnp::sum(per_row(xs, m)); };
  report("vmap.grad", px::jit(px::grad(row_loss))(w, x));
}

// Zero-size operands cross processes as nothing, on every process alike.
void empty(const px::Mesh& mesh) {
  const Array x = px::device_put(jnp::zeros({8, 0}), px::NamedSharding(mesh, P("x", "y")));
  for (const char* axes : {"x", "y"}) {
    const lax::AxisNames names(axes);
    auto f = px::shard_map(
        [names](const Array& a) {
          return lax::psum(a, names) + jnp::sum(lax::all_gather(a, names, 0, true), 0, true) +
                 lax::ppermute(a, names, {{0, 1}, {1, 0}});
        },
        mesh, P("x", "y"), P("x", "y"), {.check_vma = false});
    report(std::string("empty.") + axes, f(x));
  }
  report("empty.reshard", px::device_put(x, px::NamedSharding(mesh, P("y", "x"))));
}

void random_draws(const px::Mesh& mesh) {
  const px::NamedSharding s(mesh, P("x", "y"));
  auto normal = px::jit(
      [](const jr::Key& k) {
        return jr::normal(k, {32, 16});
      },
      {.out_shardings = {s}});
  auto uniform = px::jit(
      [](const jr::Key& k) {
        return jr::uniform(k, {32, 16});
      },
      {.out_shardings = {s}});
  auto bits = px::jit(
      [](const jr::Key& k) {
        return jr::bits(k, {32, 16});
      },
      {.out_shardings = {s}});
  const jr::Key key = jr::key(42);
  report("random.normal", normal(key));
  report("random.uniform", uniform(key));
  report("random.bits", bits(key));
}

// Loops run on every process in lockstep: the predicate each process reads is the same
// replicated value, and the collectives inside a body pair up step by step.
void control_flow(const std::string& tag, const px::Mesh& mesh) {
  const Array x = px::device_put(values({16, 32}, 0.02f), px::NamedSharding(mesh, P("x", None)));
  const Array ws = px::device_put(values({3, 32, 32}, 0.07f) * 0.3f,
                                  px::NamedSharding(mesh, P(None, None, "y")));
  auto layers = [](const Array& h, const Array& ws) {
    return lax::scan(
        [](const Array& c, const Array& w) {
          Array next = jnp::tanh(jnp::dot(c, w));
          return std::pair{next, jnp::sum(next)};
        },
        h, ws);
  };
  auto [h, sums] = px::jit(layers)(x, ws);
  report("cf.scan." + tag, h);
  report("cf.scan_ys." + tag, sums);
  auto grow = [](const Array& a) {
    return lax::while_loop([](const Array& c) { return jnp::sum(jnp::abs(c)) < 1000.0f; },
                           [](const Array& c) { return c * 1.5f + 0.25f; }, a);
  };
  report("cf.while." + tag, px::jit(grow)(x));
  auto pick = [](const Array& a) {
    return lax::cond(
        jnp::sum(a) > 0.0f, [](const Array& b) { return jnp::exp(b); },
        [](const Array& b) { return -b; }, a);
  };
  report("cf.cond." + tag, px::jit(pick)(x));
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("PARAX_NUM_PROCESSES") || std::getenv("OMPI_COMM_WORLD_SIZE")) {
    px::distributed::initialize();
  }
  try {
    const px::Mesh mesh = px::make_mesh({4, 2}, {"x", "y"});
    const px::Mesh mesh24 = px::make_mesh({2, 4}, {"x", "y"});
    sharding_examples(mesh);
    dots("4x2", mesh);
    dots("2x4", mesh24);
    constraints(mesh);
    mlp();
    pmap_training();
    shard_maps("4x2", mesh);
    shard_maps("2x4", mesh24);
    vmaps(mesh);
    empty(mesh);
    random_draws(mesh);
    control_flow("4x2", mesh);
    control_flow("2x4", mesh24);
  } catch (const px::Error& e) {
    std::cerr << "mp_cases: " << e.what() << "\n";
    return 1;
  }
  // Lines go to PARAX_MP_OUT/out.<process index> when set (launchers may interleave the
  // processes' output), else to stdout.
  std::ofstream file;
  if (const char* dir = std::getenv("PARAX_MP_OUT")) {
    file.open(std::string(dir) + "/out." + std::to_string(px::process_index()));
  }
  std::ostream& os = file.is_open() ? static_cast<std::ostream&>(file) : std::cout;
  for (const std::string& l : lines) os << l << "\n";
  os.flush();
  px::distributed::shutdown();
  return 0;
}
