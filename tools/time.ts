/**
 * get_current_time: the time in the home zone, an IANA zone, or a city or country the model
 * names ("Tokyo", "New York", "Japan") when that maps to one zone.
 */
import { DateTime, IANAZone } from 'luxon';
import { errorResult, textResult, type ToolModule } from '../src/toolhost/api.js';

interface City {
  city: string;
  city_ascii: string;
  timezone: string;
  pop: number;
}
interface Country {
  id: string;
  name: string;
  timezones: string[];
}

/** Folded place name → zone, built once: zone names, then cities (most populous wins), then countries. */
interface Gazetteer {
  zones: Map<string, string>;
  cities: Map<string, City>;
  countries: Map<string, Country>;
}
let gazetteer: Promise<Gazetteer> | undefined;

/** The city list is a few MB of JSON: load it on the first name that is not a zone. */
function loadGazetteer(): Promise<Gazetteer> {
  gazetteer ??= Promise.all([import('city-timezones'), import('countries-and-timezones')]).then(([c, t]) => {
    const zones = new Map<string, string>();
    for (const zone of Intl.supportedValuesOf('timeZone')) zones.set(fold(cityOfZone(zone)), zone);
    const cities = new Map<string, City>();
    for (const city of (c.default as unknown as { cityMapping: City[] }).cityMapping) {
      for (const name of new Set([fold(city.city), fold(city.city_ascii)])) {
        const known = cities.get(name);
        if (known === undefined || known.pop < city.pop) cities.set(name, city);
      }
    }
    const countries = new Map<string, Country>();
    for (const country of Object.values(t.default.getAllCountries()) as Country[]) countries.set(fold(country.name), country);
    for (const [alias, id] of Object.entries(COUNTRY_ALIASES)) {
      const country = [...countries.values()].find((x) => x.id === id);
      if (country !== undefined) countries.set(alias, country);
    }
    return { zones, cities, countries };
  });
  return gazetteer;
}

export interface Place {
  zone: string;
  /** How to say where: "Tokyo", or "" for home. */
  name: string;
}

/** Everyday names for countries whose listed name differs (ISO 3166 codes as values). */
const COUNTRY_ALIASES: Record<string, string> = {
  'usa': 'US', 'us': 'US', 'united states': 'US', 'america': 'US', 'the us': 'US', 'the united states': 'US',
  'uk': 'GB', 'britain': 'GB', 'great britain': 'GB', 'england': 'GB', 'scotland': 'GB', 'wales': 'GB',
  'the uk': 'GB', 'uae': 'AE', 'the netherlands': 'NL', 'holland': 'NL', 'czech republic': 'CZ',
};

const fold = (s: string): string =>
  s.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[\s_-]+/g, ' ').trim();

/** Resolve a zone, city or country name; a string explains why not. */
export async function resolvePlace(query: string | undefined, homeZone: string): Promise<Place | string> {
  const raw = (query ?? '').trim();
  if (raw === '' || /^(here|home|local)$/i.test(raw)) return { zone: homeZone, name: '' };
  if (raw.length > 100) return 'That place name is too long.';
  if (/^(utc|gmt|z)$/i.test(raw)) return { zone: 'UTC', name: 'UTC' };
  if (raw.includes('/') && IANAZone.isValidZone(raw)) {
    const zone = new Intl.DateTimeFormat('en', { timeZone: raw }).resolvedOptions().timeZone;
    return { zone, name: cityOfZone(zone) };
  }
  const wanted = fold(raw);
  const { zones, cities, countries } = await loadGazetteer();
  const zone = zones.get(wanted);
  if (zone !== undefined) return { zone, name: cityOfZone(zone) };
  const city = cities.get(wanted);
  if (city !== undefined && IANAZone.isValidZone(city.timezone)) return { zone: city.timezone, name: city.city };
  const country = countries.get(wanted);
  if (country !== undefined) {
    const valid = country.timezones.filter((z) => IANAZone.isValidZone(z));
    // One zone, or several that all show the same time now (Germany: Berlin, and Büsingen on
    // Zurich's clock): any of them answers.
    const offsets = new Set(valid.map((z) => IANAZone.create(z).offset(Date.now())));
    if (valid[0] !== undefined && offsets.size === 1) return { zone: valid[0], name: country.name };
    const name = COUNTRY_ALIASES[wanted] === undefined ? country.name : raw;
    return `${name} has ${valid.length} time zones; name a city or a zone such as ${valid.slice(0, 3).join(', ')}.`;
  }
  return `I don't know the place or time zone "${raw}". Use an IANA zone like "Asia/Tokyo" or a city name.`;
}

function cityOfZone(zone: string): string {
  return (zone.split('/').pop() ?? zone).replace(/_/g, ' ');
}

const timezoneTool: ToolModule = {
  toggle: 'time',
  create(context) {
    return {
      tools: [
        {
          name: 'get_current_time',
          description: 'Current time and date, at home or in a timezone (IANA zone, city or country).',
          inputSchema: { type: 'object', properties: { timezone: { type: 'string' } } },
          annotations: { readOnlyHint: true },
          async run(args) {
            const place = await resolvePlace(args.timezone as string | undefined, context.homeZone);
            if (typeof place === 'string') return errorResult(place);
            const now = DateTime.fromMillis(context.now(), { zone: place.zone });
            const where = place.name === '' ? '' : ` in ${place.name}`;
            return textResult(
              `It's ${now.toFormat('h:mm a')} on ${now.toFormat('cccc, LLLL d')}${where}.`,
              { iso: now.toISO(), zone: place.zone, place: place.name, utc_offset: now.toFormat('ZZ') },
            );
          },
        },
      ],
    };
  },
};

export default timezoneTool;
