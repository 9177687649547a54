// custom_jvp and custom_vjp: functions whose derivatives the user gives.
#pragma once

#include "parax/array.h"

namespace parax {}  // namespace parax
