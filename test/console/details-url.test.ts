// Check runs' details links: the console's page of the delivery, under STEWARD_STATUS_URL.
import { describe, expect, it } from "vitest";
import { consoleBase, detailsUrlFor } from "../../src/console/mount.js";

describe("details_url", () => {
  it("goes to the delivery's console page under the public base, and nowhere without one on a real GitHub", () => {
    const config = { statusUrl: "https://status.example/steward", apiUrl: "https://api.github.com" };
    const base = consoleBase(config, "http://10.0.0.5:3000");
    expect(base).toBe("https://status.example");
    expect(detailsUrlFor(config, base, "72d3162e-cc78-11e3-81ab-4c9367dc0958")).toBe(
      "https://status.example/console/deliveries/72d3162e-cc78-11e3-81ab-4c9367dc0958",
    );
    expect(detailsUrlFor(config, base, undefined)).toBe("https://status.example/console");
    const unset = { statusUrl: undefined, apiUrl: "https://api.github.com" };
    expect(detailsUrlFor(unset, consoleBase(unset, "http://10.0.0.5:3000"), "abc")).toBeUndefined();
    const sandbox = { statusUrl: undefined, apiUrl: "http://127.0.0.1:41091" };
    expect(detailsUrlFor(sandbox, consoleBase(sandbox, "http://127.0.0.1:3916"), "a/b")).toBe(
      "http://127.0.0.1:3916/console/deliveries/a%2Fb",
    );
  });
});
