/* agent.c: the agent's shared state (agent.h). */
#include "agent.h"

dnp_agent g_agent;
