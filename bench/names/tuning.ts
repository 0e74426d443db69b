// The tuning set of the names benchmark: the five texts of the issue that found names a reader
// would join kept apart (a typo typed as another kind, a legal form, a month taken into a
// name), and a titled name beside the bare one. The mock's names and the resolver's cross-type
// candidates were tuned on these; held-out.ts is scored beside them.

import type { NameSet } from './set.ts';

const org = (surface: string, entity = surface) => ({ surface, entity, type: 'organization' as const });
const person = (surface: string, entity = surface) => ({ surface, entity, type: 'person' as const });

export const TUNING: NameSet = {
  name: 'tuning',
  texts: [
    {
      file: 't1.md',
      text: 'Northwind Traders signed the supply contract with Ada Lovelace.\n',
      names: [org('Northwind Traders'), person('Ada Lovelace')],
    },
    {
      file: 't2.md',
      text: 'Northwind Traders Ltd opened a depot by the harbour.\n',
      names: [org('Northwind Traders Ltd', 'Northwind Traders')],
    },
    {
      file: 't3.md',
      text: 'today Northwind Tradres announced results for the year.\n',
      names: [org('Northwind Tradres', 'Northwind Traders')],
    },
    {
      file: 't4.md',
      text: 'lately Southwind Brewers opened a pub by the river.\n',
      names: [org('Southwind Brewers')],
    },
    {
      file: 't5.md',
      text: 'in March Ada Lovelace wrote the annual report.\n',
      names: [person('Ada Lovelace')],
    },
    {
      file: 't6.md',
      text: 'Dr Jane Smith chaired the board meeting.\n',
      names: [person('Dr Jane Smith', 'Jane Smith')],
    },
    {
      file: 't7.md',
      text: 'the new budget was approved by Jane Smith.\n',
      names: [person('Jane Smith')],
    },
  ],
};
