/**
 * `npx tsx tests/tools/config-keys.ts`: the upstream keys of the config field table (src/core/config/fields.ts),
 * one JSON list on stdout; python/extract_upstream_defaults.py reads it to write the upstream-defaults fixture.
 */
import { CONFIG_TABLE, isUpstreamKey } from '../../src/core/config/fields';

console.log(JSON.stringify(CONFIG_TABLE.filter((f) => isUpstreamKey(f.key)).map((f) => f.key)));
