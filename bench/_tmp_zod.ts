import { z } from "zod";
console.log(typeof z);
