// Until the engines land: a run of one process has no engine.
#include "runtime/engine.h"

namespace parax::runtime {
Engine* engine() { return nullptr; }
}  // namespace parax::runtime
