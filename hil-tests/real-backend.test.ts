/** The real backend end to end on the rigs, over rosbridge (the suite: real-backend.suite.ts). */
import { describeRealBackend, ROSBRIDGE } from "./real-backend.suite.ts";

describeRealBackend(ROSBRIDGE);
