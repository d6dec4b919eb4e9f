import sodium from "libsodium-wrappers";
import { describe, expect, it } from "vitest";
import { outcome, worldPerFile } from "./domain-helpers.js";

await sodium.ready;

/** Seal a value the way a client does: libsodium sealed box under the scope's public key. */
function seal(publicKey: string, value: string): string {
  const key = sodium.from_base64(publicKey, sodium.base64_variants.ORIGINAL);
  return sodium.to_base64(sodium.crypto_box_seal(sodium.from_string(value), key), sodium.base64_variants.ORIGINAL);
}

describe("hub Actions secrets over HTTP", () => {
  const world = worldPerFile((w) =>
    w.hub.domains.deployments.putEnvironment(w.hub.control.repo("acme", "web")!, "production"),
  );
  const repo = { owner: "acme", repo: "web" };

  it("opens a sealed repository secret, never returns it, and answers 201 then 204", async () => {
    const { data: key } = await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/public-key", repo);
    expect(sodium.from_base64(key.key, sodium.base64_variants.ORIGINAL)).toHaveLength(32);
    expect(key.key_id).toMatch(/^\d+$/);
    const put = await world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
      ...repo,
      secret_name: "deploy_token",
      encrypted_value: seal(key.key, "s3cr3t-value"),
      key_id: key.key_id,
    });
    expect(put.status).toBe(201);
    expect(world().hub.domains.secrets.openedValue({ owner: "acme", repo: "web" }, "DEPLOY_TOKEN")).toBe(
      "s3cr3t-value",
    );
    const again = await world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
      ...repo,
      secret_name: "DEPLOY_TOKEN",
      encrypted_value: seal(key.key, "rotated"),
      key_id: key.key_id,
    });
    expect(again.status).toBe(204);
    expect(world().hub.domains.secrets.openedValue({ owner: "acme", repo: "web" }, "DEPLOY_TOKEN")).toBe("rotated");

    const got = await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
      ...repo,
      secret_name: "DEPLOY_TOKEN",
    });
    expect(Object.keys(got.data).sort()).toEqual(["created_at", "name", "updated_at"]);
    const list = await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets", repo);
    expect(list.data).toMatchObject({ total_count: 1, secrets: [{ name: "DEPLOY_TOKEN" }] });
    expect(JSON.stringify(list.data)).not.toContain("rotated");
    expect(world().hub.domains.secrets.writesTo({ owner: "acme", repo: "web" })).toBe(2);

    expect(
      (
        await world().octokit.request("DELETE /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
          ...repo,
          secret_name: "DEPLOY_TOKEN",
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await outcome(
          world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
            ...repo,
            secret_name: "DEPLOY_TOKEN",
          }),
        )
      ).status,
    ).toBe(404);
  });

  it("answers 422 for a value that does not open under the key, a stale key_id, and bad names", async () => {
    const { data: key } = await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/public-key", repo);
    const otherKey = sodium.to_base64(sodium.crypto_box_keypair().publicKey, sodium.base64_variants.ORIGINAL);
    const wrongKey = await outcome(
      world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
        ...repo,
        secret_name: "X",
        encrypted_value: seal(otherKey, "v"),
        key_id: key.key_id,
      }),
    );
    expect(wrongKey).toMatchObject({ status: 422, message: "Validation Failed" });
    expect(JSON.stringify(wrongKey.data)).not.toContain('"v"');
    const garbage = await outcome(
      world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
        ...repo,
        secret_name: "X",
        encrypted_value: "not base64 at all!",
        key_id: key.key_id,
      }),
    );
    expect(garbage.status).toBe(422);
    const rotated = world().hub.domains.secrets.rotateKey({ owner: "acme", repo: "web" });
    expect(rotated.key_id).not.toBe(key.key_id);
    const stale = await outcome(
      world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
        ...repo,
        secret_name: "X",
        encrypted_value: seal(key.key, "v"),
        key_id: key.key_id,
      }),
    );
    expect(stale.status).toBe(422);
    const fresh = await world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
      ...repo,
      secret_name: "X",
      encrypted_value: seal(rotated.key, "v"),
      key_id: rotated.key_id,
    });
    expect(fresh.status).toBe(201);
    for (const name of ["1ABC", "GITHUB_TOKEN", "has-dash"]) {
      const bad = await outcome(
        world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
          ...repo,
          secret_name: name,
          encrypted_value: seal(rotated.key, "v"),
          key_id: rotated.key_id,
        }),
      );
      expect(bad.status, name).toBe(422);
    }
  });

  it("keeps environment secrets under the environment's own key", async () => {
    const env = { ...repo, environment_name: "production" };
    const { data: repoKey } = await world().octokit.request(
      "GET /repos/{owner}/{repo}/actions/secrets/public-key",
      repo,
    );
    const { data: envKey } = await world().octokit.request(
      "GET /repos/{owner}/{repo}/environments/{environment_name}/secrets/public-key",
      env,
    );
    expect(envKey.key).not.toBe(repoKey.key);
    const underRepoKey = await outcome(
      world().octokit.request("PUT /repos/{owner}/{repo}/environments/{environment_name}/secrets/{secret_name}", {
        ...env,
        secret_name: "DB",
        encrypted_value: seal(repoKey.key, "pg://"),
        key_id: envKey.key_id,
      }),
    );
    expect(underRepoKey.status).toBe(422);
    await world().octokit.request("PUT /repos/{owner}/{repo}/environments/{environment_name}/secrets/{secret_name}", {
      ...env,
      secret_name: "DB",
      encrypted_value: seal(envKey.key, "pg://"),
      key_id: envKey.key_id,
    });
    expect(
      world().hub.domains.secrets.openedValue({ owner: "acme", repo: "web", environment: "production" }, "DB"),
    ).toBe("pg://");
    const list = await world().octokit.request(
      "GET /repos/{owner}/{repo}/environments/{environment_name}/secrets",
      env,
    );
    expect(list.data.secrets.map((s) => s.name)).toEqual(["DB"]);
    expect(
      (
        await outcome(
          world().octokit.request("GET /repos/{owner}/{repo}/environments/{environment_name}/secrets", {
            ...repo,
            environment_name: "nowhere",
          }),
        )
      ).status,
    ).toBe(404);
  });

  it("enforces organisation secret visibility and the selected-repositories operations", async () => {
    const org = { org: "acme" };
    const { data: key } = await world().octokit.request("GET /orgs/{org}/actions/secrets/public-key", org);
    const web = world().hub.control.repo("acme", "web")!;
    const api = world().hub.control.repo("acme", "api")!;
    const idsWithPrivate = await outcome(
      world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}", {
        ...org,
        secret_name: "NPM",
        encrypted_value: seal(key.key, "npm_x"),
        key_id: key.key_id,
        visibility: "private",
        selected_repository_ids: [web.id],
      }),
    );
    expect(idsWithPrivate.status).toBe(422);
    expect(JSON.stringify(idsWithPrivate.data)).toContain("selected_repository_ids");
    const noVisibility = await outcome(
      world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}", {
        ...org,
        secret_name: "NPM",
        encrypted_value: seal(key.key, "npm_x"),
        key_id: key.key_id,
      } as never),
    );
    expect(noVisibility.status).toBe(422);

    const created = await world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}", {
      ...org,
      secret_name: "NPM",
      encrypted_value: seal(key.key, "npm_x"),
      key_id: key.key_id,
      visibility: "selected",
      selected_repository_ids: [web.id],
    });
    expect(created.status).toBe(201);
    expect(world().hub.domains.secrets.openedValue({ org: "acme" }, "NPM")).toBe("npm_x");
    const got = await world().octokit.request("GET /orgs/{org}/actions/secrets/{secret_name}", {
      ...org,
      secret_name: "NPM",
    });
    expect(got.data).toMatchObject({ name: "NPM", visibility: "selected" });
    expect(got.data).not.toHaveProperty("value");
    const selected = await world().octokit.request("GET /orgs/{org}/actions/secrets/{secret_name}/repositories", {
      ...org,
      secret_name: "NPM",
    });
    expect(selected.data.repositories.map((r) => r.id)).toEqual([web.id]);

    const forWeb = await world().octokit.request("GET /repos/{owner}/{repo}/actions/organization-secrets", repo);
    expect(forWeb.data.secrets.map((s) => s.name)).toContain("NPM");
    const forApi = await world().octokit.request("GET /repos/{owner}/{repo}/actions/organization-secrets", {
      owner: "acme",
      repo: "api",
    });
    expect(forApi.data.secrets.map((s) => s.name)).not.toContain("NPM");

    await world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}/repositories/{repository_id}", {
      ...org,
      secret_name: "NPM",
      repository_id: api.id,
    });
    expect(
      (
        await world().octokit.request("GET /repos/{owner}/{repo}/actions/organization-secrets", {
          owner: "acme",
          repo: "api",
        })
      ).data.secrets.map((s) => s.name),
    ).toContain("NPM");
    await world().octokit.request("DELETE /orgs/{org}/actions/secrets/{secret_name}/repositories/{repository_id}", {
      ...org,
      secret_name: "NPM",
      repository_id: web.id,
    });
    await world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}/repositories", {
      ...org,
      secret_name: "NPM",
      selected_repository_ids: [web.id, api.id],
    });
    expect(
      (
        await world().octokit.request("GET /orgs/{org}/actions/secrets/{secret_name}/repositories", {
          ...org,
          secret_name: "NPM",
        })
      ).data.total_count,
    ).toBe(2);

    await world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}", {
      ...org,
      secret_name: "SHARED",
      encrypted_value: seal(key.key, "all"),
      key_id: key.key_id,
      visibility: "all",
    });
    const conflict = await outcome(
      world().octokit.request("PUT /orgs/{org}/actions/secrets/{secret_name}/repositories/{repository_id}", {
        ...org,
        secret_name: "SHARED",
        repository_id: web.id,
      }),
    );
    expect(conflict.status).toBe(409);
    const orgList = await world().octokit.request("GET /orgs/{org}/actions/secrets", org);
    expect(orgList.data.secrets.map((s) => [s.name, s.visibility])).toEqual([
      ["NPM", "selected"],
      ["SHARED", "all"],
    ]);
  });

  it("an out-of-band edit bumps updated_at without counting as an API write", async () => {
    const { data: key } = await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/public-key", repo);
    await world().octokit.request("PUT /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
      ...repo,
      secret_name: "EDITED",
      encrypted_value: seal(key.key, "a"),
      key_id: key.key_id,
    });
    const before = (
      await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
        ...repo,
        secret_name: "EDITED",
      })
    ).data;
    const writes = world().hub.domains.secrets.writesTo({ owner: "acme", repo: "web" });
    world().hub.control.advanceClock(5 * 60_000);
    world().hub.domains.secrets.setSecretOutOfBand({ owner: "acme", repo: "web" }, "EDITED", "by hand");
    const after = (
      await world().octokit.request("GET /repos/{owner}/{repo}/actions/secrets/{secret_name}", {
        ...repo,
        secret_name: "EDITED",
      })
    ).data;
    expect(after.updated_at > before.updated_at).toBe(true);
    expect(after.created_at).toBe(before.created_at);
    expect(world().hub.domains.secrets.writesTo({ owner: "acme", repo: "web" })).toBe(writes);
    expect(world().hub.domains.secrets.openedValue({ owner: "acme", repo: "web" }, "EDITED")).toBe("by hand");
  });
});
