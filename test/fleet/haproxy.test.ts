import { startHaproxy } from "./harness.js";
import { fleetScenarios } from "./scenarios.js";

// Three replicas behind the real HAProxy (Debian's; .ci/run installs it) running deploy/haproxy/haproxy.cfg.
fleetScenarios("haproxy", startHaproxy);
