import { startNginx } from "./harness.js";
import { fleetScenarios } from "./scenarios.js";

// Three replicas behind the real NGINX (Debian's; .ci/run installs it) running deploy/nginx/maple.conf.
fleetScenarios("nginx", startNginx);
