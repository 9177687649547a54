// The other process of the checkpoint tests:
//   checkpoint_child save <dir> <version> [<stage> <n>]
//     saves version <version> of a small training state at <dir> (replacing what is
//     there), killing itself with SIGKILL at the n-th <stage> of the save if given;
//   checkpoint_child mp-save <dir> / mp-restore <dir> <mesh rows> <spec>
//     under parax-run: every process saves the tutorial's (8, 4) array laid out P('a','b')
//     on a 4x2 mesh, or restores it onto <rows>x(8/rows) as <spec> ("ab", "ba", "a-",
//     "-a", "r") and prints each addressable shard's index and values;
//   checkpoint_child mp-die <dir>
//     under parax-run: process 1 dies (SIGKILL) while writing its first chunk; process 0
//     prints the error its save raised;
//   checkpoint_child mp-manager-fail <dir>
//     under parax-run: a manager's background save fails on process 0 (the one that
//     commits); every process prints what wait_until_finished raised and the steps there;
//   checkpoint_child preempt <step>
//     under parax-run: steps until reached_preemption_sync_point, process 1 sending itself
//     SIGTERM at <step>; prints the step where the processes stopped.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include <parax/checkpointing.h>
#include <parax/parax.h>

#include "checkpointing/internal.h"

namespace parax {
namespace {

namespace jnp = numpy;

std::map<std::string, Array> state(int version) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  return {
      {"w", device_put(jnp::arange(64.0).astype(DType::float32).reshape({16, 4}) + float(version),
                       NamedSharding(mesh, P("a", "b")))},
      {"b", device_put(jnp::full({8}, version), NamedSharding(mesh, P("a")))},
      {"step", jnp::asarray(version)}};
}

PartitionSpec spec_of(const std::string& s) {
  if (s == "ab") return P("a", "b");
  if (s == "ba") return P("b", "a");
  if (s == "a-") return P("a", None);
  if (s == "-a") return P(None, "a");
  return P();
}

int main_(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "save" && (argc == 4 || argc == 6)) {
    if (argc == 6) {
      const std::string stage = argv[4];
      int left = std::atoi(argv[5]);
      checkpointing::set_save_observer([stage, left](std::string_view s) mutable {
        if (s == stage && --left == 0) std::raise(SIGKILL);
      });
    }
    checkpointing::save(argv[2], state(std::atoi(argv[3])), {.force = true});
    return 0;
  }
  if (mode == "mp-save" && argc == 3) {
    distributed::initialize();
    const Array x = make_array_from_callback(
        Shape{8, 4}, NamedSharding(make_mesh({4, 2}, {"a", "b"}), P("a", "b")),
        [](const Index& index) {
          std::vector<float> v;
          for (int64_t i = index[0].begin(8); i < index[0].end(8); ++i) {
            for (int64_t j = index[1].begin(4); j < index[1].end(4); ++j)
              v.push_back(float(i * 4 + j));
          }
          return v;
        });
    checkpointing::save(argv[2], std::map<std::string, Array>{{"x", x}});
    distributed::shutdown();
    return 0;
  }
  if (mode == "mp-restore" && argc == 5) {
    distributed::initialize();
    const int64_t rows = std::atoll(argv[3]);
    const NamedSharding s(make_mesh({rows, 8 / rows}, {"a", "b"}), spec_of(argv[4]));
    const Array x =
        checkpointing::restore(
            argv[2],
            std::map<std::string, Array>{{"x", ShapeDtypeStruct({8, 4}, DType::float32, s)}})
            .at("x");
    for (const Shard& shard : x.addressable_shards()) {
      std::cout << "shard " << index_str(shard.index) << " ";
      for (float v : shard.data.to_vector<float>()) std::cout << v << ",";
      std::cout << "\n";
    }
    distributed::shutdown();
    return 0;
  }
  if (mode == "mp-die" && argc == 3) {
    distributed::initialize();
    checkpointing::set_save_observer([](std::string_view stage) {
      if (stage == "chunk" && process_index() == 1) std::raise(SIGKILL);
    });
    const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
    const Array x =
        make_array_from_callback(Shape{8, 4}, NamedSharding(mesh, P("a", "b")),
                                 [](const Index&) { return std::vector<float>(4, 1.0f); });
    try {
      checkpointing::save(argv[2], std::map<std::string, Array>{{"x", x}});
      std::cout << "saved\n";
    } catch (const DistributedError& e) {
      std::cout << "caught DistributedError: " << e.what() << "\n";
    }
    return 0;
  }
  if (mode == "mp-manager-fail" && argc == 3) {
    distributed::initialize();
    checkpointing::set_save_observer([](std::string_view stage) {
      if (stage == "chunk" && process_index() == 0) throw RuntimeError("disk on fire");
    });
    const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
    const Array x =
        make_array_from_callback(Shape{8, 4}, NamedSharding(mesh, P("a", "b")),
                                 [](const Index&) { return std::vector<float>(4, 1.0f); });
    checkpointing::CheckpointManager mgr(argv[2]);
    mgr.save(1, std::map<std::string, Array>{{"x", x}});
    try {
      mgr.wait_until_finished();
      std::cout << "finished\n";
    } catch (const std::exception& e) {
      std::cout << "raised " << e.what() << "\n";
    }
    std::cout << "steps " << mgr.all_steps().size() << "\n";
    distributed::shutdown();
    return 0;
  }
  if (mode == "preempt" && argc == 3) {
    distributed::initialize();
    const int64_t notice = std::atoll(argv[2]);
    for (int64_t step = 0; step < 1000; ++step) {
      if (process_index() == 1 && step == notice) std::raise(SIGTERM);
      if (multihost_utils::reached_preemption_sync_point(step)) {
        std::cout << "preempted at step " << step << "\n";
        break;
      }
    }
    distributed::shutdown();
    return 0;
  }
  std::cerr << "usage: checkpoint_child save <dir> <version> [<stage> <n>] | mp-save <dir> | "
               "mp-restore <dir> <rows> <spec> | preempt <step>\n";
  return 2;
}

}  // namespace
}  // namespace parax

int main(int argc, char** argv) {
  try {
    return parax::main_(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
