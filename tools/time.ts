/**
 * get_current_time: the time in the home zone, an IANA zone, or a city or country the model
 * names ("Tokyo", "New York", "Japan") when that maps to one zone.
 */
import { createRequire } from 'node:module';
import { DateTime, IANAZone } from 'luxon';
import { errorResult, textResult, type ToolModule } from '../src/toolhost/api.js';

interface City {
  city: string;
  city_ascii: string;
  country: string;
  timezone: string;
  pop: number;
}
interface Country {
  id: string;
  name: string;
  timezones: string[];
}

const require = createRequire(import.meta.url);
let places: { cities: City[]; countries: Country[] } | undefined;

/** The gazetteers are a few MB of JSON: load them on the first name that is not a zone. */
function gazetteers(): { cities: City[]; countries: Country[] } {
  places ??= {
    cities: (require('city-timezones') as { cityMapping: City[] }).cityMapping,
    countries: Object.values(
      (require('countries-and-timezones') as { getAllCountries(): Record<string, Country> }).getAllCountries(),
    ),
  };
  return places;
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
export function resolvePlace(query: string | undefined, homeZone: string): Place | string {
  const raw = (query ?? '').trim();
  if (raw === '' || /^(here|home|local)$/i.test(raw)) return { zone: homeZone, name: '' };
  if (raw.length > 100) return 'That place name is too long.';
  if (/^(utc|gmt|z)$/i.test(raw)) return { zone: 'UTC', name: 'UTC' };
  const wanted = fold(raw);
  const zones = Intl.supportedValuesOf('timeZone');
  const exact = zones.find((z) => z.toLowerCase() === raw.toLowerCase());
  if (exact !== undefined && IANAZone.isValidZone(exact)) return { zone: exact, name: cityOfZone(exact) };
  const byCity = zones.filter((z) => fold(cityOfZone(z)) === wanted);
  if (byCity.length === 1 && byCity[0] !== undefined) return { zone: byCity[0], name: cityOfZone(byCity[0]) };
  const { cities, countries } = gazetteers();
  const city = cities
    .filter((c) => fold(c.city_ascii) === wanted || fold(c.city) === wanted)
    .sort((a, b) => b.pop - a.pop)[0];
  if (city !== undefined && IANAZone.isValidZone(city.timezone)) return { zone: city.timezone, name: city.city };
  const alias = COUNTRY_ALIASES[wanted];
  const country = countries.find((c) => fold(c.name) === wanted || c.id === alias);
  if (country !== undefined) {
    const valid = country.timezones.filter((z) => IANAZone.isValidZone(z));
    if (valid.length === 1 && valid[0] !== undefined) return { zone: valid[0], name: country.name };
    const name = alias === undefined ? country.name : raw;
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
          description: 'Current time and date. Omit timezone for home.',
          inputSchema: {
            type: 'object',
            properties: { timezone: { type: 'string', description: 'IANA zone, city or country' } },
          },
          annotations: { readOnlyHint: true },
          run(args) {
            const place = resolvePlace(args.timezone as string | undefined, context.homeZone);
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
