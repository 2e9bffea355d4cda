import { conversationScenarios } from "./conversationScenarios.js";
import { startNginx } from "./harness.js";

// Three replicas sharing a real redis-server behind the real NGINX running deploy/nginx/maple.conf.
conversationScenarios("nginx", startNginx);
