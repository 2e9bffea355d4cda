import { conversationScenarios } from "./conversationScenarios.js";
import { startHaproxy } from "./harness.js";

// Three replicas sharing a real redis-server behind the real HAProxy running deploy/haproxy/haproxy.cfg.
conversationScenarios("haproxy", startHaproxy);
