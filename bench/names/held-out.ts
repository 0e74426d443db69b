// The held-out set of the names benchmark: written before the mock's names and the resolver's
// cross-type candidates were tuned on the tuning set (tuning.ts), in the same spirit with other
// names, titles, months, weekdays and kinds, and never looked at while tuning. It includes two
// things of different kinds with near-identical names (a bank and a person) that must stay apart.

import type { NameSet } from './set.ts';

const org = (surface: string, entity = surface) => ({ surface, entity, type: 'organization' as const });
const person = (surface: string, entity = surface) => ({ surface, entity, type: 'person' as const });

export const HELD_OUT: NameSet = {
  name: 'held-out',
  texts: [
    {
      file: 'h01.md',
      text: 'Wingtip Logistics moved its warehouse to the coast, said Grace Hopper.\n',
      names: [org('Wingtip Logistics'), person('Grace Hopper')],
    },
    {
      file: 'h02.md',
      text: 'Wingtip Logistics Inc hired drivers for the winter.\n',
      names: [org('Wingtip Logistics Inc', 'Wingtip Logistics')],
    },
    {
      file: 'h03.md',
      text: 'yesterday Wingtip Logsitics reported a loss.\n',
      names: [org('Wingtip Logsitics', 'Wingtip Logistics')],
    },
    {
      file: 'h04.md',
      text: 'recently Tailspin Logistics bought two lorries.\n',
      names: [org('Tailspin Logistics')],
    },
    {
      file: 'h05.md',
      text: 'on Tuesday Grace Hopper presented the budget.\n',
      names: [person('Grace Hopper')],
    },
    {
      file: 'h06.md',
      text: 'Prof Alan Turing reviewed the cipher.\n',
      names: [person('Prof Alan Turing', 'Alan Turing')],
    },
    {
      file: 'h07.md',
      text: 'the audit was signed by Alan Turing.\n',
      names: [person('Alan Turing')],
    },
    {
      file: 'h08.md',
      text: 'in December Initech Corporation renewed the lease.\n',
      names: [org('Initech Corporation')],
    },
    {
      file: 'h09.md',
      text: 'the deposit was paid by Initech Corp on time.\n',
      names: [org('Initech Corp', 'Initech Corporation')],
    },
    {
      file: 'h10.md',
      text: 'Mrs Edith Clarke inspected the grid.\n',
      names: [person('Mrs Edith Clarke', 'Edith Clarke')],
    },
    {
      file: 'h11.md',
      text: 'the plan was approved by Edith Clarke.\n',
      names: [person('Edith Clarke')],
    },
    {
      file: 'h12.md',
      text: 'last year Hamilton Bank opened a branch.\n',
      names: [org('Hamilton Bank')],
    },
    {
      file: 'h13.md',
      text: 'the mural was painted by Hamilton Banks.\n',
      names: [person('Hamilton Banks')],
    },
  ],
};
