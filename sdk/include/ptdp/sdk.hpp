#pragma once
// Everything a plugin author needs.
#include "ptdp/checkpoint_store.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/config.hpp"
#include "ptdp/counter_rng.hpp"
#include "ptdp/error.hpp"
#include "ptdp/layer_kernels.hpp"
#include "ptdp/plugin.hpp"
#include "ptdp/rendezvous.hpp"
#include "ptdp/gpt_parameters.hpp"
#include "ptdp/saved_slots.hpp"
#include "ptdp/scheduler.hpp"
#include "ptdp/tensor.hpp"
